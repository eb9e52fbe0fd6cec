/* Sampling options shared by rlx generate, run and chat: one table, one parser, one help text. */
#ifndef RLX_TOOLS_CLI_SAMPLING_H
#define RLX_TOOLS_CLI_SAMPLING_H

#include <stdbool.h>

#include "cli_util.h"
#include "rlx/runner.h"
#include "rlx/status.h"

#define RLX_CLI_SAMPLING_HELP                                                                      \
    "sampling (applied in llama.cpp's order: penalty, top-k, top-p, min-p, temperature):\n"        \
    "  --temp T             temperature; 0 = greedy argmax\n"                                      \
    "  --top-k K            keep the K most likely tokens; 0 = off\n"                               \
    "  --top-p P            keep the smallest set with probability >= P; 1 = off\n"                \
    "  --min-p M            keep tokens with p >= M * p_max; 0 = off\n"                            \
    "  --repeat-penalty R   penalise ids seen in the last --repeat-last-n; 1 = off\n"              \
    "  --repeat-last-n N    the penalty's window, the last N ids (default 64; 0 = off, -1 = the\n" \
    "                       whole context; as llama.cpp)\n"                                    \
    "  --seed S             random seed; the same seed gives the same ids\n"                       \
    "  --ignore-eos         keep going past the end-of-sequence token\n"

/* The options of RLX_CLI_SAMPLING_HELP, for a command's struct option table. */
enum {
    RLX_OPT_TEMP = RLX_OPT_SAMPLING,
    RLX_OPT_TOP_K,
    RLX_OPT_TOP_P,
    RLX_OPT_MIN_P,
    RLX_OPT_REPEAT_PENALTY,
    RLX_OPT_REPEAT_LAST_N,
    RLX_OPT_SEED,
    RLX_OPT_IGNORE_EOS,
};
#define RLX_CLI_SAMPLING_OPTIONS                                                                   \
    {"temp", required_argument, NULL, RLX_OPT_TEMP}, {"top-k", required_argument, NULL, RLX_OPT_TOP_K}, \
        {"top-p", required_argument, NULL, RLX_OPT_TOP_P}, {"min-p", required_argument, NULL, RLX_OPT_MIN_P}, \
        {"repeat-penalty", required_argument, NULL, RLX_OPT_REPEAT_PENALTY},                       \
        {"repeat-last-n", required_argument, NULL, RLX_OPT_REPEAT_LAST_N},                         \
        {"seed", required_argument, NULL, RLX_OPT_SEED}, {"ignore-eos", no_argument, NULL, RLX_OPT_IGNORE_EOS}

/* --repeat-last-n's default, llama.cpp's. A command starts its options with it: rlx_sample_opts
 * reads 0 as 64, but on the command line 0 turns the penalty off, so the CLI never leaves 0 there
 * unless the user gave it. */
#define RLX_CLI_REPEAT_LAST_N 64

/* Applies option opt (from rlx_cli_next) when it is one of RLX_CLI_SAMPLING_HELP's; *matched tells
 * whether it was. --repeat-last-n -1 becomes INT32_MAX: a window past the start of the history is
 * all of it, and the history never outgrows the context. */
rlx_status rlx_cli_sampling_option(const rlx_cli_parser *p, int opt, rlx_sample_opts *o, bool *matched);
/* After every option: maps llama.cpp's --repeat-last-n 0 (penalty off) onto the runner's options,
 * whatever the order of --repeat-last-n and --repeat-penalty. */
void rlx_cli_sampling_finish(rlx_sample_opts *o);

/* The options rlx run, chat and generate share: the model's (with --tokens), --decode-ahead and
 * sampling. */
#define RLX_CLI_GENERATION_OPTIONS                                                                 \
    RLX_CLI_RUNNER_OPTIONS, RLX_CLI_TOKENS_OPTION, RLX_CLI_DECODE_AHEAD_OPTION, RLX_CLI_SAMPLING_OPTIONS
rlx_status rlx_cli_generation_option(const rlx_cli_parser *p, int opt, rlx_cli_model_args *m, rlx_sample_opts *o,
                                     bool *matched);

#endif
