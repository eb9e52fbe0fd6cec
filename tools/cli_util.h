/* Option parsing shared by the rlx subcommands: numbers with range checks, token id lists, and
 * options that take a value. Every error names the option and the offending text, and is an
 * RLX_ERR_INVALID_ARGUMENT (a command maps it to exit code 2). */
#ifndef RLX_TOOLS_CLI_UTIL_H
#define RLX_TOOLS_CLI_UTIL_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "rlx/runner.h"
#include "rlx/status.h"

/* Exit codes of every subcommand. */
#define RLX_EXIT_OK 0
#define RLX_EXIT_RUNTIME 1 /* the library returned an error: its message is printed */
#define RLX_EXIT_USAGE 2   /* bad or missing arguments */
#define RLX_EXIT_INTERRUPTED 130 /* stopped by Ctrl-C: 128 + SIGINT, what a shell reports for it */

/* Parses "1,2,3" (spaces around items allowed) into *out (owned by the caller, free()) of *n ids,
 * each in [0, INT32_MAX]. Empty lists, empty items, junk and overflow are errors. */
rlx_status rlx_cli_parse_ids(const char *opt, const char *text, int32_t **out, int32_t *n);

/* A whole decimal integer in [min, max]. */
rlx_status rlx_cli_parse_i64(const char *opt, const char *text, int64_t min, int64_t max, int64_t *out);
/* rlx_cli_parse_i64 into an int32_t; min and max are within int32_t. */
rlx_status rlx_cli_parse_i32(const char *opt, const char *text, int32_t min, int32_t max, int32_t *out);
/* A worker thread count, 0 (every online core) .. RLX_CLI_MAX_THREADS. */
#define RLX_CLI_MAX_THREADS 1024
rlx_status rlx_cli_parse_threads(const char *opt, const char *text, int *out);
/* A whole decimal unsigned 64-bit integer (no sign). */
rlx_status rlx_cli_parse_u64(const char *opt, const char *text, uint64_t *out);
/* A size in bytes: a whole number with an optional suffix K, M, G or T (powers of 1024, either
 * case), e.g. 512M; in [min, max]. */
rlx_status rlx_cli_parse_size(const char *opt, const char *text, int64_t min, int64_t max, int64_t *out);
/* A finite number in [min, max]. */
rlx_status rlx_cli_parse_f64(const char *opt, const char *text, double min, double max, double *out);

/* ---- the option parser: getopt_long driven by one struct option table per command ----
 *
 * A command lists its options as a struct option table (val: the short option's character, or an
 * id from RLX_OPT_SHARED / RLX_OPT_SAMPLING / RLX_OPT_COMMAND up for long-only options) and its
 * short options as a getopt string without the leading "-:", then calls rlx_cli_next until it
 * gives RLX_CLI_END. Arguments are read in order, argv is not permuted, and getopt prints nothing
 * (opterr = 0): every message is rlx's own. Beyond getopt's rules:
 *   - long options must be spelled in full: an abbreviation ("--mod") is an unknown option, so
 *     that a typo, or an option added later, cannot change what an existing command line means;
 *   - "--" is an unknown option (rlx has no end-of-options marker; a value may still be "--"). */
#define RLX_CLI_ARG 1  /* a positional argument, in value */
#define RLX_CLI_END -1 /* every argument is read */

enum {
    RLX_OPT_SHARED = 256,   /* the model options and --decode-ahead, below */
    RLX_OPT_SAMPLING = 320, /* cli_sampling.h */
    RLX_OPT_COMMAND = 384,  /* a command's own long-only options */
};

typedef struct rlx_cli_parser {
    int argc;
    char **argv;                /* borrowed */
    const char *shorts;         /* borrowed: getopt's short options, e.g. "m:t:h" */
    const struct option *longs; /* borrowed: ends with a zero entry */
    const char *long_names;     /* short options that messages name by their long name ("t": --threads) */
    bool or_argument;           /* say "unknown option or extra argument" for what is not an option */
    /* set by rlx_cli_next */
    const char *value;   /* the option's value, or the positional argument; borrowed from argv */
    const char *element; /* the argv element being read */
    char name[40];       /* the option as messages name it: "-m", "--threads" */
    char optstring[40];  /* "-:" + shorts */
    bool started;
} rlx_cli_parser;

/* The next option of p: *opt is its val, RLX_CLI_ARG or RLX_CLI_END. The first call resets
 * getopt, so a command can parse again in the same process. Errors: an unknown option and an
 * option without its value ("option -m needs a value"). */
rlx_status rlx_cli_next(rlx_cli_parser *p, int *opt);
/* "unknown option 'ELEMENT'" (or "unknown option or extra argument 'ELEMENT'"). */
rlx_status rlx_cli_unknown(const rlx_cli_parser *p);
/* Reads every option of p in order and hands each to apply (opt as from rlx_cli_next, never
 * RLX_CLI_END); stops at the first error. */
typedef rlx_status (*rlx_cli_apply_fn)(const rlx_cli_parser *p, int opt, void *args);
rlx_status rlx_cli_parse(rlx_cli_parser *p, rlx_cli_apply_fn apply, void *args);

/* Prints "rlx <cmd>: <message>" to stderr (plus a pointer to --help for usage errors), frees s,
 * and returns the exit code for its kind:
 * RLX_EXIT_USAGE for RLX_ERR_INVALID_ARGUMENT raised by option parsing (usage = true),
 * RLX_EXIT_RUNTIME otherwise. */
int rlx_cli_fail(const char *cmd, rlx_status s, bool usage);

/* The options every model command shares. */
typedef struct rlx_cli_model_args {
    const char *model;    /* borrowed from argv */
    int32_t *ids;         /* owned (free()), n_ids; NULL until --tokens */
    int32_t n_ids;
    rlx_runner_opts opts; /* backend, device: borrowed from argv */
    bool bad_ids;         /* set by rlx_cli_check_ids: its error is a usage error (exit 2) */
} rlx_cli_model_args;

/* --kv-type, in the columns of RLX_CLI_MODEL_HELP. */
#define RLX_CLI_KV_TYPE_HELP                                                                       \
    "  --kv-type TYPE       f16 or f32: the K/V cache's element type (default f16 on Vulkan, f32\n" \
    "                       where the device lacks 16-bit storage and on the CPU, which has f32\n"  \
    "                       only)\n"

#define RLX_CLI_MODEL_HELP                                                                         \
    "  -m, --model PATH     a GGUF file or an HF model directory (config.json + *.safetensors)\n"   \
    "  --tokens IDS         the prompt as comma-separated token ids, e.g. 1,403,407\n"              \
    "                       (`rlx tokenize -m PATH --ids -p TEXT` gives the ids of a text)\n"       \
    "  --backend NAME       cpu or vulkan (default: a Vulkan GPU when the build and the machine\n"  \
    "                       have one, else cpu)\n"                                                   \
    "  --device NAME        the Vulkan device, by index or name substring (default:\n"             \
    "                       $RLX_VK_DEVICE, else the first GPU; see `rlx devices`)\n"              \
    "  -t, --threads N      CPU threads (default 0: every online core)\n"                            \
    "  -c, --ctx N          context length (default 0: min(the model's training context, 4096))\n"  \
    RLX_CLI_KV_TYPE_HELP

/* The options of RLX_CLI_MODEL_HELP: a command lists RLX_CLI_RUNNER_OPTIONS (and
 * RLX_CLI_TOKENS_OPTION where it takes --tokens) in its table, RLX_CLI_MODEL_SHORTS in its short
 * options, and "tc" in long_names (messages name -t as --threads, -c as --ctx). -c is llama.cpp's
 * spelling of --ctx. */
enum { RLX_OPT_TOKENS = RLX_OPT_SHARED, RLX_OPT_BACKEND, RLX_OPT_DEVICE, RLX_OPT_DECODE_AHEAD, RLX_OPT_KV_TYPE };
#define RLX_CLI_MODEL_SHORTS "m:t:c:"
#define RLX_CLI_RUNNER_OPTIONS                                                                     \
    {"model", required_argument, NULL, 'm'}, {"backend", required_argument, NULL, RLX_OPT_BACKEND}, \
        {"device", required_argument, NULL, RLX_OPT_DEVICE}, {"threads", required_argument, NULL, 't'}, \
        {"ctx", required_argument, NULL, 'c'}, {"kv-type", required_argument, NULL, RLX_OPT_KV_TYPE}
#define RLX_CLI_TOKENS_OPTION {"tokens", required_argument, NULL, RLX_OPT_TOKENS}
#define RLX_CLI_DECODE_AHEAD_OPTION {"decode-ahead", required_argument, NULL, RLX_OPT_DECODE_AHEAD}

/* Applies option opt (from rlx_cli_next) when it is one of RLX_CLI_MODEL_HELP's; *matched tells
 * whether it was. */
rlx_status rlx_cli_model_option(const rlx_cli_parser *p, int opt, rlx_cli_model_args *a, bool *matched);
/* --decode-ahead N (1..64), the runner's decode_ahead; *matched tells whether opt was it. */
#define RLX_CLI_DECODE_AHEAD_HELP                                                                  \
    "  --decode-ahead N     under greedy sampling (--temp 0), steps decoded on the device before\n" \
    "                       their tokens are reported, 1..64 (default 8; 1: each token as soon as\n" \
    "                       it is decoded)\n"
rlx_status rlx_cli_decode_ahead_option(const rlx_cli_parser *p, int opt, rlx_runner_opts *o, bool *matched);
/* --tokens against the open model's vocabulary: an id outside it is a bad argument like any other
 * (exit 2), only found once the model is open; sets a->bad_ids when it fails. NULL ids: nothing
 * to check. */
rlx_status rlx_cli_check_ids(rlx_cli_model_args *a, const rlx_runner *r);
/* Errors when -m or --tokens is missing. */
rlx_status rlx_cli_model_check(const rlx_cli_model_args *a);

/* Seconds on a monotonic clock. */
double rlx_cli_now(void);

#endif
