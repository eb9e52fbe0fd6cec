/* See cache_dir.h. One of the few places that read the environment (a test in tests/cli/ checks). */
#include "loader/core/cache_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static void mkdir_parents(char *dir) {
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(dir, 0755);
        *p = '/';
    }
    mkdir(dir, 0755);
}

bool rlx_cache_dir(char *buf, size_t size) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (size) buf[0] = 0;
    if (xdg && *xdg)
        snprintf(buf, size, "%s/rlx", xdg);
    else if (home && *home)
        snprintf(buf, size, "%s/.cache/rlx", home);
    else
        return false;
    mkdir_parents(buf);
    return true;
}
