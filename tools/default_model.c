/* The default model, models/stories260K.gguf, linked into the rlx binary (the assembler's .incbin),
 * so that `rlx` runs it wherever the binary is, with no source tree or install path to find. The
 * loader opens models by path, so the bytes are handed to it as an in-memory file (memfd). */
#define _GNU_SOURCE /* memfd_create */
#include "default_model.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef RLX_DEFAULT_MODEL_FILE
#error "RLX_DEFAULT_MODEL_FILE (the path of models/stories260K.gguf) must be defined by the build"
#endif

/* GGUF readers need 8-byte alignment at most; 64 keeps the copy's source cache-line aligned. */
__asm__(".section .rodata\n"
        ".balign 64\n"
        ".global rlx_default_model_bytes\n"
        "rlx_default_model_bytes:\n"
        ".incbin \"" RLX_DEFAULT_MODEL_FILE "\"\n"
        ".global rlx_default_model_end\n"
        "rlx_default_model_end:\n"
        ".byte 0\n"
        ".previous\n");
extern const uint8_t rlx_default_model_bytes[], rlx_default_model_end[];

size_t rlx_default_model_size(void) { return (size_t)(rlx_default_model_end - rlx_default_model_bytes); }

rlx_status rlx_default_model_path(const char **path) {
    static char made[64];
    if (!made[0]) {
        int fd = memfd_create("stories260K.gguf", MFD_CLOEXEC);
        if (fd < 0)
            return rlx_errorf(RLX_ERR_IO, "the embedded default model: cannot create an in-memory file: %s",
                              strerror(errno));
        size_t n = rlx_default_model_size(), done = 0;
        while (done < n) {
            ssize_t w = write(fd, rlx_default_model_bytes + done, n - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                int e = errno;
                close(fd);
                return rlx_errorf(RLX_ERR_IO, "the embedded default model: cannot write its %zu bytes: %s", n,
                                  w < 0 ? strerror(e) : "no progress");
            }
            done += (size_t)w;
        }
        /* the descriptor stays open for the process: the path below names it */
        snprintf(made, sizeof made, "/proc/self/fd/%d", fd);
    }
    *path = made;
    return NULL;
}
