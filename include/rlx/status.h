/* rlx status values: every fallible call returns one. NULL means success; anything else owns a
 * message that names the thing, where it is, and what was expected. */
#ifndef RLX_STATUS_H
#define RLX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    RLX_OK = 0,
    RLX_ERR_INVALID_ARGUMENT, /* caller passed something impossible */
    RLX_ERR_BAD_FILE,         /* a model/tokenizer file is malformed */
    RLX_ERR_UNSUPPORTED,      /* valid, but not implemented (the message names what) */
    RLX_ERR_OUT_OF_MEMORY,    /* host or device */
    RLX_ERR_DEVICE,           /* driver/device failure, e.g. device lost */
    RLX_ERR_IO,               /* open/read/mmap failed */
    RLX_ERR_NOT_FOUND,        /* a named thing (tensor, key, file) does not exist */
    RLX_ERR_INTERNAL,         /* an invariant of rlx itself is broken: a bug, whatever the input */
} rlx_code;

typedef struct rlx_status_s *rlx_status; /* NULL means OK; otherwise owns a message */

#if defined(__GNUC__)
#define RLX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define RLX_PRINTF(a, b)
#endif

/* Never returns NULL: if the message cannot be allocated, a static out-of-memory status is
 * returned instead (freeing it is a no-op). */
rlx_status rlx_errorf(rlx_code code, const char *fmt, ...) RLX_PRINTF(2, 3);
/* Prefixes the message of s with context ("loading 'x.gguf': ...") and returns s. */
rlx_status rlx_status_annotate(rlx_status s, const char *fmt, ...) RLX_PRINTF(2, 3);
rlx_code rlx_status_code(rlx_status s);       /* RLX_OK for NULL */
const char *rlx_status_message(rlx_status s); /* "ok" for NULL; borrowed from s */
const char *rlx_code_name(rlx_code code);
void rlx_status_free(rlx_status s);           /* NULL is fine */

#define RLX_TRY(expr)                                                                              \
    do {                                                                                           \
        rlx_status s_ = (expr);                                                                    \
        if (s_) return s_;                                                                         \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
