/* Sampling options shared by rlx generate, run and chat: one table, one parser, one help text. */
#ifndef RLX_TOOLS_CLI_SAMPLING_H
#define RLX_TOOLS_CLI_SAMPLING_H

#include <stdbool.h>

#include "rlx/runner.h"
#include "rlx/status.h"

#define RLX_CLI_SAMPLING_HELP                                                                      \
    "sampling (applied in llama.cpp's order: penalty, top-k, top-p, min-p, temperature):\n"        \
    "  --temp T             temperature; 0 = greedy argmax\n"                                      \
    "  --top-k K            keep the K most likely tokens; 0 = off\n"                               \
    "  --top-p P            keep the smallest set with probability >= P; 1 = off\n"                \
    "  --min-p M            keep tokens with p >= M * p_max; 0 = off\n"                            \
    "  --repeat-penalty R   penalise ids seen in the last --repeat-last-n; 1 = off\n"              \
    "  --repeat-last-n N    the penalty's window (default 64)\n"                                    \
    "  --seed S             random seed; the same seed gives the same ids\n"                       \
    "  --ignore-eos         keep going past the end-of-sequence token\n"

/* Consumes argv[*i] (and its value) when it is one of RLX_CLI_SAMPLING_HELP's options. */
rlx_status rlx_cli_sampling_option(int argc, char **argv, int *i, rlx_sample_opts *o, bool *matched);

#endif
