/* Opening a file that must be a regular file: a model, a shard, a config, a tokenizer or a
 * template. Opening a FIFO for reading blocks until a writer appears, and reading /dev/zero never
 * ends, so the type is checked on a descriptor opened with O_NONBLOCK, before any blocking read.
 * (Prompt files and `-` are streams on purpose and do not come here.) */
#ifndef RLX_LOADER_REGULAR_FILE_H
#define RLX_LOADER_REGULAR_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

/* Opens `path` read-only (close-on-exec, blocking mode restored) when it is a regular file.
 * *fd and *size (may be NULL) are set only on success; the caller closes *fd. Errors name the
 * path: RLX_ERR_NOT_FOUND (missing), RLX_ERR_IO (permission; a directory, FIFO, device or socket). */
rlx_status rlx_file_open_regular(const char *path, int *fd, uint64_t *size);

/* The same check by name, opening nothing (stat follows symbolic links). */
rlx_status rlx_file_check_regular(const char *path);

/* An error when `path` exists and is not a regular file (a FIFO, a device, a directory, a socket);
 * NULL when it is a regular file or does not exist, so that the caller's own open still reports a
 * missing file as it always has. For reads through a library's own open (json_load_file, fopen). */
rlx_status rlx_file_refuse_special(const char *path);

/* The whole regular file at `path` in a malloc'ed buffer with a NUL after its *len bytes (the
 * caller frees it); more than max_bytes is RLX_ERR_BAD_FILE, so a huge file is refused before it is
 * read, not after. */
rlx_status rlx_file_read_regular(const char *path, size_t max_bytes, char **data, size_t *len);

#endif
