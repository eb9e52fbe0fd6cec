/* The rlx commands parse their arguments with getopt_long, whose state is global. A command called
 * again in the same process (test_corrupt_corpus calls them in forked children of one process; an
 * embedder may call them in a loop) must read its new argv from the start: a run that stopped
 * on an error in the middle of "-xh" must not leave the "h" behind for the next one. Each call
 * here runs in this process, with stdout and stderr captured to temporary files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "test_util.h"

#define MAX_ARGS 8

typedef struct captured {
    int code;
    char out[1024], err[1024]; /* the start of each, NUL-terminated */
} captured;

static void read_back(FILE *f, char *buf, size_t cap) {
    rewind(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Calls fn with a fresh copy of args (NULL-terminated), its stdout and stderr in c. */
static void call(int (*fn)(int, char **), const char *const *args, captured *c) {
    char *argv[MAX_ARGS + 1] = {0};
    int argc = 0;
    while (args[argc] && argc < MAX_ARGS) {
        argv[argc] = strdup(args[argc]);
        argc++;
    }
    FILE *out = tmpfile(), *err = tmpfile();
    if (!out || !err) {
        fprintf(stderr, "test_cli_reparse: no temporary file\n");
        exit(1);
    }
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(STDOUT_FILENO), saved_err = dup(STDERR_FILENO);
    dup2(fileno(out), STDOUT_FILENO);
    dup2(fileno(err), STDERR_FILENO);
    c->code = fn(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    read_back(out, c->out, sizeof c->out);
    read_back(err, c->err, sizeof c->err);
    for (int i = 0; i < argc; i++) free(argv[i]);
}

static void expect(int (*fn)(int, char **), const char *const *args, int code, const char *out, const char *err) {
    captured c;
    call(fn, args, &c);
    printf("rlx %s ...: exit %d, stdout '%.60s', stderr '%.80s'\n", args[0], c.code, c.out, c.err);
    T_CHECK(c.code == code, "rlx %s: exit %d, expected %d", args[0], c.code, code);
    T_CHECK(!strcmp(c.out, out), "rlx %s: stdout '%s', expected '%s'", args[0], c.out, out);
    T_CHECK(!strncmp(c.err, err, strlen(err)), "rlx %s: stderr '%s', expected it to start '%s'", args[0], c.err, err);
}

int main(void) {
    const char *model = t_source_path("models/stories260K.gguf");
    const char *const ids[] = {"tokenize", "-m", model, "--ids", "-p", "hello", NULL};
    const char *const half[] = {"tokenize", "-xh", NULL};
    const char *const detok[] = {"detokenize", "--model", model, "400,401", NULL};
    const char *const no_value[] = {"generate", "-m", model, "--tokens", NULL};
    const char *const synth[] = {"synth", "--like", NULL};

    /* the same command twice, then after an error that stopped in the middle of a cluster */
    expect(rlx_cmd_tokenize, ids, 0, "[1, 281, 306, 414]\n", "");
    expect(rlx_cmd_tokenize, ids, 0, "[1, 281, 306, 414]\n", "");
    expect(rlx_cmd_tokenize, half, 2, "", "rlx tokenize: unknown option or extra argument '-xh'\n");
    expect(rlx_cmd_tokenize, ids, 0, "[1, 281, 306, 414]\n", "");
    /* other commands in between, each with its own table */
    expect(rlx_cmd_detokenize, detok, 0, "do lo", "");
    expect(rlx_cmd_generate, no_value, 2, "", "rlx generate: option --tokens needs a value\n");
    expect(rlx_cmd_synth, synth, 2, "", "rlx synth: option --like needs a value\n");
    expect(rlx_cmd_tokenize, half, 2, "", "rlx tokenize: unknown option or extra argument '-xh'\n");
    expect(rlx_cmd_detokenize, detok, 0, "do lo", "");
    return t_summary("test_cli_reparse");
}
