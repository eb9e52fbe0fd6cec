#include "cli_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for at least need + 1 bytes (the NUL) in *buf of *cap, doubling up to limit + 1. */
static bool grow(char **buf, size_t *cap, size_t need, size_t limit) {
    if (need < *cap) return true;
    size_t next = *cap ? *cap * 2 : 4096;
    if (next < need + 1) next = need + 1;
    if (next > limit + 2) next = limit + 2; /* limit + 1 bytes tell "too long", + 1 for the NUL */
    char *p = realloc(*buf, next);
    if (!p) return false;
    *buf = p;
    *cap = next;
    return true;
}

static rlx_status too_long(const char *what, size_t max) {
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s holds more than %zu bytes, the limit for a prompt", what, max);
}

/* Reads f to its end into *buf; at most max bytes. */
static rlx_status read_stream(FILE *f, const char *what, size_t max, char **buf, size_t *len) {
    size_t n = 0, cap = 0;
    for (;;) {
        if (!grow(buf, &cap, n + 1, max)) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: %zu bytes", what, n + 1);
        size_t got = fread(*buf + n, 1, cap - 1 - n, f);
        n += got;
        if (n > max) return too_long(what, max);
        if (got == 0) break; /* fread blocks until its count is read: a short read is the end or an error */
    }
    if (ferror(f)) return rlx_errorf(RLX_ERR_IO, "%s: read error: %s", what, strerror(errno));
    (*buf)[n] = '\0';
    *len = n;
    return NULL;
}

rlx_status rlx_cli_read_text(const char *path, size_t max, char **out, size_t *len) {
    bool is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) return rlx_errorf(RLX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    char what[300];
    snprintf(what, sizeof what, is_stdin ? "standard input" : "'%s'", path);
    char *buf = NULL;
    errno = 0;
    rlx_status s = read_stream(f, what, max, &buf, len);
    if (!is_stdin) fclose(f);
    if (s) free(buf);
    else *out = buf;
    return s;
}

rlx_status rlx_cli_read_line(FILE *f, const char *what, size_t max, char **line, size_t *cap, size_t *len,
                             bool *got) {
    size_t n = 0;
    int c;
    errno = 0;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (n == max)
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: a line of more than %zu bytes, the limit for a prompt",
                              what, max);
        if (!grow(line, cap, n + 1, max)) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: a line of %zu bytes", what, n);
        (*line)[n++] = (char)c;
    }
    if (c == EOF && ferror(f)) return rlx_errorf(RLX_ERR_IO, "%s: read error: %s", what, strerror(errno));
    *got = c != EOF || n > 0;
    if (!grow(line, cap, n, max)) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: a line of %zu bytes", what, n);
    (*line)[n] = '\0';
    *len = n;
    return NULL;
}
