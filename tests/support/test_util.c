#include "test_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int t_failures;
int t_checks;

void t_fail(const char *file, int line, const char *fmt, ...) {
    t_failures++;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

bool t_expect_ok(rlx_status s, const char *what, const char *file, int line) {
    t_checks++;
    if (!s) return true;
    t_fail(file, line, "%s failed: %s", what, rlx_status_message(s));
    rlx_status_free(s);
    return false;
}

bool t_expect_err(rlx_status s, int code, const char *needle, const char *what, const char *file, int line) {
    t_checks++;
    if (!s) {
        t_fail(file, line, "%s succeeded, expected error '%s' containing \"%s\"", what, rlx_code_name(code),
               needle);
        return false;
    }
    bool ok = rlx_status_code(s) == (rlx_code)code && strstr(rlx_status_message(s), needle);
    if (!ok)
        t_fail(file, line, "%s: expected %s containing \"%s\", got %s: %s", what, rlx_code_name(code), needle,
               rlx_code_name(rlx_status_code(s)), rlx_status_message(s));
    rlx_status_free(s);
    return ok;
}

static const char *source_dir(void) {
    const char *env = getenv("RLX_SOURCE_DIR");
    return env && *env ? env : RLX_SOURCE_DIR;
}

const char *t_fixtures_dir(void) {
    static char buf[4096];
    const char *env = getenv("RLX_FIXTURES");
    if (env && *env) return env;
    snprintf(buf, sizeof buf, "%s/../shared/fixtures", source_dir());
    return buf;
}

static char *rotating_buffer(void) {
    static char bufs[8][4096];
    static int next;
    return bufs[next++ % 8];
}

/* dir/rel in a rotating buffer; a path that does not fit ends the test rather than open a wrong file */
static const char *join_path(const char *dir, const char *rel) {
    char *b = rotating_buffer();
    int n = snprintf(b, 4096, "%s/%s", dir, rel);
    if (n < 0 || n >= 4096) {
        fprintf(stderr, "FAIL: path %s/%s is longer than the test's 4096-byte buffer\n", dir, rel);
        exit(1);
    }
    return b;
}

const char *t_fixture(const char *rel) { return join_path(t_fixtures_dir(), rel); }

const char *t_source_path(const char *rel) { return join_path(source_dir(), rel); }

void *t_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *buf = n >= 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) return NULL;
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

void t_write_file(const char *path, const void *bytes, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "FAIL: cannot write %s\n", path);
        exit(1);
    }
}

static char tmp_dir[512];

const char *t_tmp_dir(const char *prefix) {
    if (tmp_dir[0]) return tmp_dir;
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/%s-XXXXXX", prefix);
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        exit(1);
    }
    return tmp_dir;
}

const char *t_tmp_path(const char *name) {
    if (!tmp_dir[0]) {
        fprintf(stderr, "FAIL: t_tmp_path(%s) before t_tmp_dir\n", name);
        exit(1);
    }
    return join_path(tmp_dir, name);
}

void t_tmp_dir_remove(void) {
    if (tmp_dir[0]) rmdir(tmp_dir);
    tmp_dir[0] = 0;
}

void t_require_fixture(const char *rel) {
    struct stat st;
    const char *path = t_fixture(rel);
    if (stat(path, &st) == 0) return;
    const char *ci = getenv("CI");
    if (ci && strcmp(ci, "true") == 0) {
        fprintf(stderr, "FAIL: fixture %s is missing and CI=true (CI must never pass by skipping)\n", path);
        exit(1);
    }
    fprintf(stderr, "SKIPPED: fixture %s is missing (set RLX_FIXTURES or place ../shared/fixtures)\n", path);
    exit(T_SKIP_CODE);
}

json_t *t_load_json(const char *path) {
    json_error_t err;
    json_t *j = json_load_file(path, 0, &err);
    if (!j) {
        fprintf(stderr, "FAIL: cannot load %s: %s (line %d)\n", path, err.text, err.line);
        exit(1);
    }
    return j;
}

int t_summary(const char *name) {
    printf("%s: %d checks, %d failed\n", name, t_checks, t_failures);
    return t_failures ? 1 : 0;
}

/* In the child: "NAME=value" strings into the environment. */
static void set_env_list(const char *const env[]) {
    for (size_t i = 0; env && env[i]; i++) {
        char name[256];
        const char *eq = strchr(env[i], '=');
        size_t n = eq ? (size_t)(eq - env[i]) : 0;
        if (n == 0 || n >= sizeof name) continue;
        memcpy(name, env[i], n);
        name[n] = '\0';
        setenv(name, eq + 1, 1);
    }
}

bool t_run_cli(const char *const argv[], const char *const env[], unsigned timeout_s, t_cli_result *out) {
    memset(out, 0, sizeof *out);
    out->status = -1;
    char err_path[] = "/tmp/rlx-test-cli-XXXXXX";
    int fd = mkstemp(err_path);
    t_checks++;
    if (fd < 0) {
        t_fail(__FILE__, __LINE__, "cannot create a temporary file for %s's stderr", argv[0]);
        return false;
    }
    fflush(NULL); /* the child must not flush a copy of our buffers */
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0);
        dup2(null, 1);
        dup2(fd, 2);
        set_env_list(env);
        alarm(timeout_s);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (pid > 0) waitpid(pid, &st, 0);
    ssize_t n = pread(fd, out->err, sizeof out->err - 1, 0);
    close(fd);
    unlink(err_path);
    out->len = n > 0 ? (size_t)n : 0;
    out->err[out->len] = '\0';
    for (size_t i = 0; i < out->len; i++) out->lines += out->err[i] == '\n';
    out->status = pid > 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return true;
}
