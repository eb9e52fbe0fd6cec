#include "loader/core/mapped_file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "loader/core/regular_file.h"

/* A non-empty file that fits in the address space (rlx_file_open_regular proved it regular). */
static rlx_status check_size(const char *path, uint64_t size) {
    if (size == 0) return rlx_errorf(RLX_ERR_BAD_FILE, "'%s': file is empty (0 bytes)", path);
    if (size > SIZE_MAX)
        return rlx_errorf(RLX_ERR_IO, "'%s': %" PRIu64 " bytes do not fit in the address space", path, size);
    return NULL;
}

rlx_status rlx_mapped_file_open(const char *path, rlx_mapped_file **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_mapped_file_open: NULL path or out");
    int fd;
    uint64_t file_size;
    RLX_TRY(rlx_file_open_regular(path, &fd, &file_size));
    rlx_status s = check_size(path, file_size);
    if (s) {
        close(fd);
        return s;
    }
    size_t size = (size_t)file_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_err = errno;
    close(fd); /* the mapping keeps the file alive */
    if (map == MAP_FAILED) return rlx_errorf(RLX_ERR_IO, "'%s': mmap of %zu bytes failed: %s", path, size, strerror(map_err));

    rlx_mapped_file *f = calloc(1, sizeof *f);
    char *copy = strdup(path);
    if (!f || !copy) {
        free(f);
        free(copy);
        munmap(map, size);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "'%s': out of memory opening the file", path);
    }
    f->data = map;
    f->size = size;
    f->path = copy;
    *out = f;
    return NULL;
}

void rlx_mapped_file_close(rlx_mapped_file *f) {
    if (!f) return;
    munmap((void *)f->data, f->size);
    free(f->path);
    free(f);
}
