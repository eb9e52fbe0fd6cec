#include "loader/core/regular_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static rlx_status open_error(const char *path, int err) {
    if (err == ENOENT || err == ENOTDIR) return rlx_errorf(RLX_ERR_NOT_FOUND, "'%s': no such file", path);
    if (err == EACCES || err == EPERM)
        return rlx_errorf(RLX_ERR_IO, "'%s': permission denied (cannot open for reading)", path);
    return rlx_errorf(RLX_ERR_IO, "'%s': cannot open: %s", path, strerror(err));
}

static const char *kind_of(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

static rlx_status check_mode(const char *path, const struct stat *st) {
    if (S_ISREG(st->st_mode)) return NULL;
    return rlx_errorf(RLX_ERR_IO, "'%s': is %s, expected a regular file", path, kind_of(st->st_mode));
}

rlx_status rlx_file_check_regular(const char *path) {
    if (!path) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_file_check_regular: NULL path");
    struct stat st;
    if (stat(path, &st) != 0) return open_error(path, errno);
    return check_mode(path, &st);
}

rlx_status rlx_file_refuse_special(const char *path) {
    if (!path) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_file_refuse_special: NULL path");
    struct stat st;
    return stat(path, &st) == 0 ? check_mode(path, &st) : NULL;
}

rlx_status rlx_file_open_regular(const char *path, int *fd, uint64_t *size) {
    if (!path || !fd) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_file_open_regular: NULL path or fd");
    /* O_NONBLOCK: an open of a FIFO with no writer returns at once instead of waiting */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (f < 0) return open_error(path, errno);
    struct stat st;
    rlx_status s = NULL;
    if (fstat(f, &st) != 0) s = rlx_errorf(RLX_ERR_IO, "'%s': cannot stat: %s", path, strerror(errno));
    if (!s) s = check_mode(path, &st);
    int flags = s ? 0 : fcntl(f, F_GETFL);
    if (!s && (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) < 0))
        s = rlx_errorf(RLX_ERR_IO, "'%s': cannot set blocking mode: %s", path, strerror(errno));
    if (s) {
        close(f);
        return s;
    }
    *fd = f;
    if (size) *size = (uint64_t)st.st_size;
    return NULL;
}

static rlx_status read_fd(const char *path, int fd, size_t n, char *buf) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return rlx_errorf(RLX_ERR_IO, "'%s': read error at byte %zu: %s", path, got, strerror(errno));
        if (r == 0)
            return rlx_errorf(RLX_ERR_IO, "'%s': the file shrank while read (%zu of %zu bytes)", path, got, n);
        got += (size_t)r;
    }
    return NULL;
}

rlx_status rlx_file_read_regular(const char *path, size_t max_bytes, char **data, size_t *len) {
    if (!data || !len) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_file_read_regular: NULL data or len");
    int fd;
    uint64_t size;
    RLX_TRY(rlx_file_open_regular(path, &fd, &size));
    if (size > max_bytes) {
        close(fd);
        return rlx_errorf(RLX_ERR_BAD_FILE, "'%s': %" PRIu64 " bytes, more than the %zu this file may have", path,
                          size, max_bytes);
    }
    char *buf = malloc((size_t)size + 1);
    rlx_status s = buf ? read_fd(path, fd, (size_t)size, buf)
                       : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "'%s': cannot allocate %" PRIu64 " bytes", path, size);
    close(fd);
    if (s) {
        free(buf);
        return s;
    }
    buf[size] = '\0';
    *data = buf;
    *len = (size_t)size;
    return NULL;
}
