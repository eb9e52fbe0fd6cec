/* Corrupt-file corpus: hundreds of broken models derived from the fixtures with a fixed seed
 * (corrupt_gguf.c: GGUF files; corrupt_hf.c: HF directories), each given to the CLI's commands:
 *
 *   rlx inspect PATH
 *   rlx run -m PATH -n 2 --seed 0 -t 1 --backend cpu
 *   rlx generate -m PATH --tokens 1 -n 1 -t 1 --backend cpu
 *
 * (--backend cpu: the files are under test here, not the devices; probing for a Vulkan device in
 * every child would cost more than the rest of the command.)
 *
 * Each command runs in a forked child of this test (the same rlx_cmd_* functions the rlx binary
 * dispatches to, linked in), which costs a fork instead of an exec and a sanitizer start-up per
 * command. Every command must end on its own (a hang is killed after HANG_SECONDS of wall time)
 * within CPU_SECONDS of CPU time, with an exit status < 128, no sanitizer report on stderr, and,
 * when it fails, exactly one line on stderr. Where the mutation provably breaks the file (the
 * generators argue each kind) it must fail; an unmodified baseline per source must succeed, which
 * proves the harness reaches the model at all. CPU time rather than wall time is the budget
 * because a shared CI box stretches wall time for reasons that are not the code's. In a sanitized
 * build every command runs under ASan and UBSan; LeakSanitizer's exit-time check (which costs more
 * than the command) runs for the first cases of each kind and every fourth case after that.
 *
 * Usage: test_corrupt_corpus [SOURCE_LABEL...]   (labels restrict the run, for debugging;
 * RLX_CORRUPT_VERBOSE=1 prints every case with each command's exit status and error line)
 * A violating input is kept under the printed temporary directory. */
#define _DEFAULT_SOURCE /* wait4: the CPU time of each child */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "corrupt.h"
#include "test_util.h"

#define CPU_SECONDS 5.0
#define HANG_SECONDS 20
#define SEED 0x5eedc0de2024ull

static const struct {
    const char *label;
    const char *path; /* under the fixtures, or under the source tree when in_repo */
    bool in_repo, dir;
} SOURCES[] = {
    {"stories260K", "models/stories260K.gguf", true, false},
    {"qwen3-Q8_0", "models/qwen3/qwen3-Q8_0.gguf", false, false},
    {"gemma3-Q4_K_M", "models/gemma3/gemma3-Q4_K_M.gguf", false, false},
    {"vocab-llama-spm", "tokenizers/ggml-vocab-llama-spm.gguf", false, false},
    {"qwen3-hf", "models/qwen3/hf", false, true},
    {"gemma3-hf", "models/gemma3/hf", false, true},
};

static const char *const CMD_NAMES[CMD_COUNT] = {"inspect", "run", "generate"};

/* ---- small shared helpers (corrupt.h) ---- */

corrupt_case corrupt_case_make(const char *kind, corrupt_expect inspect, corrupt_expect run, corrupt_expect generate,
                               const char *fmt, ...) {
    corrupt_case c = {.kind = kind, .expect = {inspect, run, generate}};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c.what, sizeof c.what, fmt, ap);
    va_end(ap);
    return c;
}

uint64_t corrupt_rand(corrupt_rng *g) {
    uint64_t z = (g->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t corrupt_below(corrupt_rng *g, uint64_t n) {
    return n ? corrupt_rand(g) % n : 0;
}

corrupt_rng corrupt_rng_for(const char *label) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the label, so adding a source reshuffles no other */
    for (const char *p = label; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return (corrupt_rng){SEED ^ h};
}

void corrupt_put_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void corrupt_put_u64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t corrupt_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t corrupt_get_u64(const uint8_t *p) {
    return corrupt_get_u32(p) | (uint64_t)corrupt_get_u32(p + 4) << 32;
}

/* ---- the driver ---- */

typedef struct tally {
    const char *label, *kind; /* static strings */
    int cases;
    int failed[CMD_COUNT]; /* commands that exited non-zero */
} tally;

struct corrupt_runner {
    char tmp[256];         /* the working directory */
    const char *label;     /* the current source */
    char src_dir[1024];    /* the current source directory (HF sources) */
    tally tallies[256];
    int n_tallies;
    int n_cases, n_violations;
    bool verbose; /* $RLX_CORRUPT_VERBOSE: every case with each command's exit and stderr */
    uint8_t *disk; /* owned: what case.gguf holds now (disk_size bytes) when disk_valid */
    size_t disk_size, disk_cap;
    bool disk_valid;
    double worst_cpu, worst_wall;
    char worst_what[320];
};

typedef struct result {
    int status; /* exit status, or -1 when killed by a signal */
    int signal;
    double cpu, wall;
    char err[4096]; /* the head of stderr */
    size_t err_len; /* the whole of stderr */
} result;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef int (*command_fn)(int argc, char **argv);

/* A child running one command with stdin/stdout on /dev/null and stderr into err_path. It ends
 * with exit() when leak_check is set, so that LeakSanitizer checks it as it would the rlx process,
 * else with _exit(), which skips that check (in an ASan build the check costs more than the
 * command). */
static pid_t spawn(command_fn fn, char **argv, const char *err_path, bool leak_check) {
    fflush(NULL); /* the child must not flush a copy of our buffers */
    pid_t pid = fork();
    if (pid != 0) return pid;
    int null = open("/dev/null", O_RDWR);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (null < 0 || err < 0) _exit(126);
    dup2(null, 0);
    dup2(null, 1);
    dup2(err, 2);
    alarm(HANG_SECONDS); /* a hang dies of SIGALRM */
    int argc = 0;
    while (argv[argc]) argc++;
    int rc = fn(argc, argv);
    fflush(NULL);
    if (leak_check) exit(rc);
    _exit(rc);
}

static void collect(pid_t pid, double t0, const char *err_path, result *res) {
    int st = 0;
    struct rusage ru;
    while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
    }
    res->wall = now() - t0;
    res->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
               (double)ru.ru_stime.tv_usec * 1e-6;
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    res->err[0] = '\0';
    res->err_len = 0;
    FILE *f = fopen(err_path, "rb");
    if (f) {
        res->err_len = fread(res->err, 1, sizeof res->err - 1, f);
        res->err[res->err_len] = '\0';
        fseek(f, 0, SEEK_END);
        res->err_len = (size_t)ftell(f);
        fclose(f);
    }
}

/* Leak checks: every case of the first LEAK_CHECK_FIRST of each kind and source, then every
 * LEAK_CHECK_EVERY-th case (all cases remain under ASan and UBSan). */
#define LEAK_CHECK_FIRST 4
#define LEAK_CHECK_EVERY 4

static tally *tally_for(corrupt_runner *r, const char *kind);

/* The three commands at once (each single-threaded): a case costs the slowest of them. */
static void run_commands(corrupt_runner *r, const corrupt_case *cs, const char *path_in, result res[CMD_COUNT]) {
    const tally *t = tally_for(r, cs->kind);
    bool leak_check = (t && t->cases < LEAK_CHECK_FIRST) || r->n_cases % LEAK_CHECK_EVERY == 0;
    static const command_fn fns[CMD_COUNT] = {rlx_cmd_inspect, rlx_cmd_run, rlx_cmd_generate};
    char *path = (char *)path_in;
    char *argv[CMD_COUNT][12] = {
        {"inspect", path, NULL},
        {"run", "-m", path, "-n", "2", "--seed", "0", "-t", "1", "--backend", "cpu", NULL},
        {"generate", "-m", path, "--tokens", "1", "-n", "1", "-t", "1", "--backend", "cpu", NULL},
    };
    char err_path[CMD_COUNT][300];
    pid_t pid[CMD_COUNT];
    double t0 = now();
    for (int c = 0; c < CMD_COUNT; c++) {
        snprintf(err_path[c], sizeof err_path[c], "%s/stderr-%d", r->tmp, c);
        pid[c] = spawn(fns[c], argv[c], err_path[c], leak_check);
    }
    for (int c = 0; c < CMD_COUNT; c++) {
        if (pid[c] < 0) {
            res[c] = (result){.status = 126};
            snprintf(res[c].err, sizeof res[c].err, "fork failed: %s\n", strerror(errno));
            continue;
        }
        collect(pid[c], t0, err_path[c], &res[c]);
    }
}

static bool one_line(const result *res) {
    const char *nl = strchr(res->err, '\n');
    return res->err_len > 1 && nl && (size_t)(nl - res->err) == res->err_len - 1;
}

/* Why this command's outcome breaks the rules, or NULL. */
static const char *violation(const result *res, corrupt_expect e, char *buf, size_t n) {
    if (res->signal)
        snprintf(buf, n, "killed by signal %d%s", res->signal,
                 res->signal == SIGALRM ? " (still running after the hang limit)" : "");
    else if (res->status >= 128) snprintf(buf, n, "exit status %d (>= 128)", res->status);
    else if (res->cpu > CPU_SECONDS) snprintf(buf, n, "%.2f s of CPU, limit %.0f s", res->cpu, CPU_SECONDS);
    else if (strstr(res->err, "Sanitizer") || strstr(res->err, "runtime error:")) snprintf(buf, n, "sanitizer report");
    else if (e == EXPECT_FAIL && res->status == 0) snprintf(buf, n, "succeeded, but this mutation must fail");
    else if (e == EXPECT_OK && res->status != 0) snprintf(buf, n, "failed on the unmodified fixture");
    else if (res->status != 0 && !one_line(res)) snprintf(buf, n, "the error is not exactly one line");
    else return NULL;
    return buf;
}

static tally *tally_for(corrupt_runner *r, const char *kind) {
    for (int i = 0; i < r->n_tallies; i++)
        if (r->tallies[i].label == r->label && !strcmp(r->tallies[i].kind, kind)) return &r->tallies[i];
    if (r->n_tallies == (int)(sizeof r->tallies / sizeof r->tallies[0])) return NULL;
    tally *t = &r->tallies[r->n_tallies++];
    *t = (tally){.label = r->label, .kind = kind};
    return t;
}

/* Records the outcome; returns true when the input must be kept (a violation). */
static bool judge(corrupt_runner *r, const corrupt_case *c, const result res[CMD_COUNT]) {
    r->n_cases++;
    tally *t = tally_for(r, c->kind);
    if (t) t->cases++;
    bool bad = false;
    if (r->verbose) {
        printf("[%s] %s: %s\n", r->label, c->kind, c->what);
        for (int k = 0; k < CMD_COUNT; k++)
            printf("    %-8s exit %d  %.200s%s", CMD_NAMES[k], res[k].status, res[k].err,
                   one_line(&res[k]) || !res[k].err_len ? "" : "\n");
    }
    for (int k = 0; k < CMD_COUNT; k++) {
        if (t) t->failed[k] += res[k].status != 0;
        if (res[k].cpu > r->worst_cpu || res[k].wall > r->worst_wall)
            snprintf(r->worst_what, sizeof r->worst_what, "%s %s: %s", r->label, CMD_NAMES[k], c->what);
        if (res[k].cpu > r->worst_cpu) r->worst_cpu = res[k].cpu;
        if (res[k].wall > r->worst_wall) r->worst_wall = res[k].wall;
        char why[128];
        t_checks++;
        if (!violation(&res[k], c->expect[k], why, sizeof why)) continue;
        bad = true;
        t_fail(__FILE__, __LINE__, "[%s] %s: %s\n    rlx %s: %s; exit %d, %.2f s CPU; stderr:\n%.1500s", r->label,
               c->kind, c->what, CMD_NAMES[k], why, res[k].status, res[k].cpu, res[k].err);
    }
    return bad;
}

static void keep_path(corrupt_runner *r, const char *path) {
    char kept[400];
    snprintf(kept, sizeof kept, "%s/violation-%d-%s", r->tmp, ++r->n_violations, r->label);
    if (rename(path, kept) == 0) printf("    kept as %s\n", kept);
}

static bool write_file(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(data, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

/* [lo, hi): the span where a and b (n bytes each) differ; lo == hi when they are equal. */
static void diff_span(const uint8_t *a, const uint8_t *b, size_t n, size_t *lo, size_t *hi) {
    enum { CHUNK = 4096 };
    size_t i = 0, j = n;
    while (i + CHUNK <= n && !memcmp(a + i, b + i, CHUNK)) i += CHUNK;
    while (i < n && a[i] == b[i]) i++;
    while (j >= i + CHUNK && !memcmp(a + j - CHUNK, b + j - CHUNK, CHUNK)) j -= CHUNK;
    while (j > i && a[j - 1] == b[j - 1]) j--;
    *lo = i;
    *hi = j;
}

/* Successive cases differ from the fixture in a few bytes or a length: case.gguf is rewritten only
 * where it differs from what is on disk (a full write per case would dominate the test). */
static bool update_file(corrupt_runner *r, const char *path, const uint8_t *data, size_t size) {
    if (r->disk_cap < size) {
        uint8_t *p = realloc(r->disk, size);
        if (!p) return false;
        r->disk = p;
        r->disk_cap = size;
    }
    int fd = open(path, O_WRONLY | O_CREAT | (r->disk_valid ? 0 : O_TRUNC), 0600);
    if (fd < 0) return false;
    size_t common = r->disk_valid ? (size < r->disk_size ? size : r->disk_size) : 0, lo, hi;
    diff_span(r->disk, data, common, &lo, &hi);
    bool ok = pwrite(fd, data + lo, hi - lo, (off_t)lo) == (ssize_t)(hi - lo) &&
              (size <= common || pwrite(fd, data + common, size - common, (off_t)common) == (ssize_t)(size - common)) &&
              ftruncate(fd, (off_t)size) == 0;
    ok &= close(fd) == 0;
    memcpy(r->disk + lo, data + lo, size - lo);
    r->disk_size = size;
    r->disk_valid = ok;
    return ok;
}

void corrupt_check_file(corrupt_runner *r, const corrupt_case *c, const uint8_t *data, size_t size) {
    char path[300];
    snprintf(path, sizeof path, "%s/case.gguf", r->tmp);
    if (!update_file(r, path, data, size)) {
        t_fail(__FILE__, __LINE__, "cannot write %s", path);
        return;
    }
    result res[CMD_COUNT];
    run_commands(r, c, path, res);
    if (judge(r, c, res)) {
        keep_path(r, path);
        r->disk_valid = false;
    }
}

static const corrupt_override *find_override(const corrupt_override *ov, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(ov[i].name, name)) return &ov[i];
    return NULL;
}

/* An HF directory: every source file linked, overridden ones written (data NULL: left out). */
static bool make_dir(corrupt_runner *r, const char *dir, const corrupt_override *ov, size_t n_ov) {
    if (mkdir(dir, 0700) != 0) return false;
    DIR *d = opendir(r->src_dir);
    if (!d) return false;
    bool ok = true;
    struct dirent *e;
    char from[1400], to[1400];
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.' || find_override(ov, n_ov, e->d_name)) continue;
        snprintf(from, sizeof from, "%s/%s", r->src_dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", dir, e->d_name);
        ok = symlink(from, to) == 0;
    }
    closedir(d);
    for (size_t i = 0; ok && i < n_ov; i++) {
        if (!ov[i].data) continue;
        snprintf(to, sizeof to, "%s/%s", dir, ov[i].name);
        ok = write_file(to, ov[i].data, ov[i].size);
    }
    return ok;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[1400];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_dir(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

void corrupt_check_dir(corrupt_runner *r, const corrupt_case *c, const corrupt_override *ov, size_t n_ov) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/case-hf", r->tmp);
    if (!make_dir(r, dir, ov, n_ov)) {
        t_fail(__FILE__, __LINE__, "cannot build %s from %s: %s", dir, r->src_dir, strerror(errno));
        remove_dir(dir);
        return;
    }
    result res[CMD_COUNT];
    run_commands(r, c, dir, res);
    if (judge(r, c, res)) keep_path(r, dir);
    else remove_dir(dir);
}

/* ---- main ---- */

static bool wanted(int argc, char **argv, const char *label) {
    if (argc < 2) return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], label)) return true;
    return false;
}

static void run_source(corrupt_runner *r, size_t i) {
    const char *path = SOURCES[i].in_repo ? t_source_path(SOURCES[i].path) : t_fixture(SOURCES[i].path);
    r->label = SOURCES[i].label;
    int before = r->n_cases;
    double t0 = now();
    if (SOURCES[i].dir) {
        snprintf(r->src_dir, sizeof r->src_dir, "%s", path);
        corrupt_hf_cases(r, r->label, path);
    } else {
        size_t size = 0;
        uint8_t *data = t_read_file(path, &size);
        if (!data) t_fail(__FILE__, __LINE__, "cannot read %s", path);
        else corrupt_gguf_cases(r, r->label, data, size);
        free(data);
    }
    printf("%-16s %4d cases in %.1f s\n", r->label, r->n_cases - before, now() - t0);
    fflush(stdout);
}

static void print_tallies(const corrupt_runner *r) {
    printf("\n%-16s %-18s %6s   non-zero exits: %8s %8s %8s\n", "source", "kind", "cases", "inspect", "run",
           "generate");
    for (int i = 0; i < r->n_tallies; i++) {
        const tally *t = &r->tallies[i];
        printf("%-16s %-18s %6d   %24d %8d %8d\n", t->label, t->kind, t->cases, t->failed[CMD_INSPECT],
               t->failed[CMD_RUN], t->failed[CMD_GENERATE]);
    }
}

int main(int argc, char **argv) {
    for (size_t i = 0; i < sizeof SOURCES / sizeof SOURCES[0]; i++)
        if (!SOURCES[i].in_repo && wanted(argc, argv, SOURCES[i].label)) t_require_fixture(SOURCES[i].path);
    static corrupt_runner r;
    r.verbose = getenv("RLX_CORRUPT_VERBOSE") != NULL;
    const char *tmpdir = getenv("TMPDIR");
    snprintf(r.tmp, sizeof r.tmp, "%s/rlx-corrupt-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(r.tmp)) {
        fprintf(stderr, "cannot create a temporary directory %s: %s\n", r.tmp, strerror(errno));
        return 1;
    }
    double t0 = now();
    for (size_t i = 0; i < sizeof SOURCES / sizeof SOURCES[0]; i++)
        if (wanted(argc, argv, SOURCES[i].label)) run_source(&r, i);
    print_tallies(&r);
    printf("\n%d cases, %d commands in %.1f s; worst %.2f s CPU, %.2f s wall (%s)\n", r.n_cases,
           r.n_cases * CMD_COUNT, now() - t0, r.worst_cpu, r.worst_wall, r.worst_what);
    if (r.n_violations) printf("violating inputs kept under %s\n", r.tmp);
    else remove_dir(r.tmp);
    free(r.disk);
    return t_summary("test_corrupt_corpus");
}
