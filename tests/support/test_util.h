/* Small test harness: checks that count failures and explain themselves, fixture lookup with the
 * skip-unless-CI rule, and JSON loading (jansson) for reference files. */
#ifndef RLX_TEST_UTIL_H
#define RLX_TEST_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "rlx/status.h"

/* ctest's SKIP_RETURN_CODE for every rlx test */
#define T_SKIP_CODE 77

extern int t_failures;
extern int t_checks;

void t_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define T_CHECK(cond, ...)                                                                         \
    do {                                                                                           \
        t_checks++;                                                                                \
        if (!(cond)) t_fail(__FILE__, __LINE__, __VA_ARGS__);                                      \
    } while (0)

/* Expects success; on failure prints the status message and frees it. */
#define T_OK(expr) t_expect_ok((expr), #expr, __FILE__, __LINE__)
bool t_expect_ok(rlx_status s, const char *what, const char *file, int line);

/* Expects an error with `code` whose message contains `needle`; frees the status. */
#define T_ERR(expr, code, needle) t_expect_err((expr), (code), (needle), #expr, __FILE__, __LINE__)
bool t_expect_err(rlx_status s, int code, const char *needle, const char *what, const char *file, int line);

/* The fixtures root: $RLX_FIXTURES, else <source>/../shared/fixtures. */
const char *t_fixtures_dir(void);
/* Path of a fixture (relative to the fixtures root) in a static buffer rotated 8 ways. */
const char *t_fixture(const char *rel);
/* Exits 77 (SKIPPED) when the fixture is missing, or fails (exit 1) when CI=true. */
void t_require_fixture(const char *rel);
/* A path under the source tree (for tests/data and models/). */
const char *t_source_path(const char *rel);

/* A fresh directory /tmp/<prefix>-XXXXXX for the test's files, made once per program (exits 1
 * when it cannot be made); t_tmp_path names a file in it (rotating buffer, as t_fixture). The test
 * removes its files, then the directory with t_tmp_dir_remove. */
const char *t_tmp_dir(const char *prefix);
const char *t_tmp_path(const char *name);
void t_tmp_dir_remove(void);

/* The whole file at path (owned, with a NUL after its *len bytes), or NULL when it cannot be opened
 * or read. */
void *t_read_file(const char *path, size_t *len);

/* Writes n bytes to path (created or truncated); exits 1 with a message when it cannot. */
void t_write_file(const char *path, const void *bytes, size_t n);

json_t *t_load_json(const char *path); /* exits 1 with a message when it cannot be read */

/* What a command run by t_run_cli did. */
typedef struct t_cli_result {
    int status;     /* exit status; -1 when it did not exit (a signal, the alarm) */
    int lines;      /* newlines on its stderr */
    size_t len;     /* bytes of stderr kept in err */
    char err[4096]; /* the start of its stderr, NUL-terminated */
} t_cli_result;

/* Runs the program argv[0] with argv (NULL-terminated), stdin and stdout on /dev/null, the
 * "NAME=value" strings of env (NULL-terminated, or NULL) set in its environment, and SIGALRM after
 * timeout_s seconds; its stderr is captured. False, with a failed check, when no temporary file
 * for stderr could be made. */
bool t_run_cli(const char *const argv[], const char *const env[], unsigned timeout_s, t_cli_result *out);

/* Prints "<name>: N checks, M failed" and returns the exit code. */
int t_summary(const char *name);

#endif
