/* rlx_status: a heap-allocated code + message. See include/rlx/status.h. */
#include "rlx/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct rlx_status_s {
    rlx_code code;
    char *message; /* owned, except in oom_status */
};

/* Returned when the status itself cannot be allocated, so an OOM never turns into success. */
static struct rlx_status_s oom_status = {RLX_ERR_OUT_OF_MEMORY, "out of memory (while reporting an error)"};

static char *vformat(const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return NULL;
    char *buf = malloc((size_t)n + 1);
    if (buf) vsnprintf(buf, (size_t)n + 1, fmt, ap);
    return buf;
}

rlx_status rlx_errorf(rlx_code code, const char *fmt, ...) {
    rlx_status s = malloc(sizeof *s);
    if (!s) return &oom_status;
    va_list ap;
    va_start(ap, fmt);
    s->message = vformat(fmt, ap);
    va_end(ap);
    if (!s->message) {
        free(s);
        return &oom_status;
    }
    s->code = code;
    return s;
}

rlx_status rlx_status_annotate(rlx_status s, const char *fmt, ...) {
    if (!s || s == &oom_status) return s;
    va_list ap;
    va_start(ap, fmt);
    char *prefix = vformat(fmt, ap);
    va_end(ap);
    if (!prefix) return s;
    size_t n = strlen(prefix) + 2 + strlen(s->message) + 1;
    char *joined = malloc(n);
    if (joined) {
        snprintf(joined, n, "%s: %s", prefix, s->message);
        free(s->message);
        s->message = joined;
    }
    free(prefix);
    return s;
}

rlx_code rlx_status_code(rlx_status s) { return s ? s->code : RLX_OK; }

const char *rlx_status_message(rlx_status s) { return s ? s->message : "ok"; }

const char *rlx_code_name(rlx_code code) {
    switch (code) {
    case RLX_OK: return "ok";
    case RLX_ERR_INVALID_ARGUMENT: return "invalid argument";
    case RLX_ERR_BAD_FILE: return "bad file";
    case RLX_ERR_UNSUPPORTED: return "unsupported";
    case RLX_ERR_OUT_OF_MEMORY: return "out of memory";
    case RLX_ERR_DEVICE: return "device error";
    case RLX_ERR_IO: return "i/o error";
    case RLX_ERR_NOT_FOUND: return "not found";
    case RLX_ERR_INTERNAL: return "internal error";
    }
    return "unknown error";
}

void rlx_status_free(rlx_status s) {
    if (!s || s == &oom_status) return;
    free(s->message);
    free(s);
}
