#include "loader/core/mapped_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static rlx_status open_error(const char *path, int err) {
    if (err == ENOENT || err == ENOTDIR)
        return rlx_errorf(RLX_ERR_NOT_FOUND, "'%s': no such file", path);
    if (err == EACCES || err == EPERM)
        return rlx_errorf(RLX_ERR_IO, "'%s': permission denied (cannot open for reading)", path);
    return rlx_errorf(RLX_ERR_IO, "'%s': cannot open: %s", path, strerror(err));
}

/* Checks what fstat says before mapping: a regular, non-empty file that fits in the address space. */
static rlx_status check_stat(const char *path, const struct stat *st) {
    if (S_ISDIR(st->st_mode)) return rlx_errorf(RLX_ERR_IO, "'%s': is a directory, expected a regular file", path);
    if (!S_ISREG(st->st_mode)) return rlx_errorf(RLX_ERR_IO, "'%s': not a regular file", path);
    if (st->st_size == 0) return rlx_errorf(RLX_ERR_BAD_FILE, "'%s': file is empty (0 bytes)", path);
    if ((uint64_t)st->st_size > SIZE_MAX)
        return rlx_errorf(RLX_ERR_IO, "'%s': %lld bytes do not fit in the address space", path,
                          (long long)st->st_size);
    return NULL;
}

rlx_status rlx_mapped_file_open(const char *path, rlx_mapped_file **out) {
    if (!path || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_mapped_file_open: NULL path or out");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return open_error(path, errno);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return rlx_errorf(RLX_ERR_IO, "'%s': cannot stat: %s", path, strerror(err));
    }
    rlx_status s = check_stat(path, &st);
    if (s) {
        close(fd);
        return s;
    }
    size_t size = (size_t)st.st_size;
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
