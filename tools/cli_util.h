/* Option parsing shared by the rlx subcommands: numbers with range checks, token id lists, and
 * options that take a value. Every error names the option and the offending text, and is an
 * RLX_ERR_INVALID_ARGUMENT (a command maps it to exit code 2). */
#ifndef RLX_TOOLS_CLI_UTIL_H
#define RLX_TOOLS_CLI_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "rlx/runner.h"
#include "rlx/status.h"

/* Exit codes of every subcommand. */
#define RLX_EXIT_OK 0
#define RLX_EXIT_RUNTIME 1 /* the library returned an error: its message is printed */
#define RLX_EXIT_USAGE 2   /* bad or missing arguments */

/* Parses "1,2,3" (spaces around items allowed) into *out (owned by the caller, free()) of *n ids,
 * each in [0, INT32_MAX]. Empty lists, empty items, junk and overflow are errors. */
rlx_status rlx_cli_parse_ids(const char *opt, const char *text, int32_t **out, int32_t *n);

/* A whole decimal integer in [min, max]. */
rlx_status rlx_cli_parse_i64(const char *opt, const char *text, int64_t min, int64_t max, int64_t *out);
/* A whole decimal unsigned 64-bit integer (no sign). */
rlx_status rlx_cli_parse_u64(const char *opt, const char *text, uint64_t *out);
/* A finite number in [min, max]. */
rlx_status rlx_cli_parse_f64(const char *opt, const char *text, double min, double max, double *out);

/* argv[*i] is an option that takes a value, written "--opt VALUE" or "--opt=VALUE". `name` is the
 * option as matched (e.g. "--tokens"). Sets *value and advances *i past what was consumed. */
rlx_status rlx_cli_take_value(int argc, char **argv, int *i, const char *name, const char **value);

/* True when argv[i] is `name`, or `name=...` for an option that takes a value. */
bool rlx_cli_is(const char *arg, const char *name, bool takes_value);

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
} rlx_cli_model_args;

#define RLX_CLI_MODEL_HELP                                                                         \
    "  -m, --model PATH     a GGUF file or an HF model directory (config.json + *.safetensors)\n"   \
    "  --tokens IDS         the prompt as comma-separated token ids, e.g. 1,403,407\n"              \
    "                       (`rlx tokenize -m PATH --ids -p TEXT` gives the ids of a text)\n"       \
    "  --backend NAME       cpu or vulkan (default: a Vulkan GPU when the build and the machine\n"  \
    "                       have one, else cpu)\n"                                                   \
    "  --device NAME        the Vulkan device, by index or name substring (default:\n"             \
    "                       $RLX_VK_DEVICE, else the first GPU; see `rlx devices`)\n"              \
    "  -t, --threads N      CPU threads (default 0: every online core)\n"                            \
    "  --ctx N              context length (default 0: min(the model's training context, 4096))\n"

/* Consumes argv[*i] (and its value) when it is one of the options in RLX_CLI_MODEL_HELP;
 * *matched tells whether it was. */
rlx_status rlx_cli_model_option(int argc, char **argv, int *i, rlx_cli_model_args *a, bool *matched);
/* --decode-ahead N (1..64), the runner's decode_ahead; *matched tells whether argv[*i] was it. */
#define RLX_CLI_DECODE_AHEAD_HELP                                                                  \
    "  --decode-ahead N     under greedy sampling (--temp 0), steps decoded on the device before\n" \
    "                       their tokens are reported, 1..64 (default 8; 1: each token as soon as\n" \
    "                       it is decoded)\n"
rlx_status rlx_cli_decode_ahead_option(int argc, char **argv, int *i, rlx_runner_opts *o, bool *matched);
/* Errors when -m or --tokens is missing. */
rlx_status rlx_cli_model_check(const rlx_cli_model_args *a);

/* Seconds on a monotonic clock. */
double rlx_cli_now(void);

#endif
