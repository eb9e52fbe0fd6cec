/* A whole file mapped read-only. Model and tokenizer readers parse straight out of the mapping,
 * so weights are never copied on the host. */
#ifndef RLX_LOADER_MAPPED_FILE_H
#define RLX_LOADER_MAPPED_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

typedef struct rlx_mapped_file {
    const uint8_t *data; /* owned: the read-only mapping, size bytes */
    size_t size;         /* > 0: empty files are refused at open */
    char *path;          /* owned copy of the path it was opened with */
} rlx_mapped_file;

/* Errors: RLX_ERR_NOT_FOUND (missing), RLX_ERR_IO (permission, not a regular file, mmap failure),
 * RLX_ERR_BAD_FILE (empty). Every message names the path. *out is set only on success. */
rlx_status rlx_mapped_file_open(const char *path, rlx_mapped_file **out);
void rlx_mapped_file_close(rlx_mapped_file *f); /* NULL is fine */

#endif
