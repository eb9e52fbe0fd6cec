/* Host memory available to allocate (host_memory.h). Linux: proc(5) for MemAvailable, the kernel's
 * cgroup-v2.rst for memory.max / memory.current. */
#include "cpu_fallback/host_memory.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The first number after `key` in a file of "Key: value" lines (or the whole file when key is
 * NULL); false when absent or not a number (memory.max holds "max" when unlimited). */
static bool read_number(const char *path, const char *key, uint64_t *out) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[256];
    bool ok = false;
    while (!ok && fgets(line, sizeof line, f)) {
        const char *p = line;
        if (key) {
            size_t n = strlen(key);
            if (strncmp(line, key, n) != 0) continue;
            p += n;
        }
        ok = sscanf(p, " %" SCNu64, out) == 1;
        if (!key) break;
    }
    fclose(f);
    return ok;
}

uint64_t rlx_host_memory_available(void) {
    uint64_t kib = 0, avail = 0, max = 0, cur = 0;
    if (read_number("/proc/meminfo", "MemAvailable:", &kib)) {
        avail = kib * 1024;
    } else {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = (uint64_t)pages * (uint64_t)page;
    }
    if (read_number("/sys/fs/cgroup/memory.max", NULL, &max) && read_number("/sys/fs/cgroup/memory.current", NULL, &cur)) {
        uint64_t room = max > cur ? max - cur : 0;
        if (!avail || room < avail) avail = room;
    }
    return avail;
}
