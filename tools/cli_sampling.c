#include "cli_sampling.h"

#include <stdint.h>
#include <string.h>

#include "cli_util.h"

typedef enum { OPT_TEMP, OPT_TOP_K, OPT_TOP_P, OPT_MIN_P, OPT_PENALTY, OPT_LAST_N, OPT_SEED } sampling_opt;

static const struct {
    const char *name;
    sampling_opt which;
} options[] = {
    {"--temp", OPT_TEMP},   {"--top-k", OPT_TOP_K},          {"--top-p", OPT_TOP_P},
    {"--min-p", OPT_MIN_P}, {"--repeat-penalty", OPT_PENALTY}, {"--repeat-last-n", OPT_LAST_N},
    {"--seed", OPT_SEED},
};

static rlx_status set_option(rlx_sample_opts *o, sampling_opt which, const char *name, const char *v) {
    double d = 0;
    int64_t k = 0;
    switch (which) {
    case OPT_TEMP:
        RLX_TRY(rlx_cli_parse_f64(name, v, 0, 1e6, &d));
        o->temperature = (float)d;
        break;
    case OPT_TOP_P:
        RLX_TRY(rlx_cli_parse_f64(name, v, 0, 1, &d));
        o->top_p = (float)d;
        break;
    case OPT_MIN_P:
        RLX_TRY(rlx_cli_parse_f64(name, v, 0, 1, &d));
        o->min_p = (float)d;
        break;
    case OPT_PENALTY:
        RLX_TRY(rlx_cli_parse_f64(name, v, 0, 1e6, &d));
        o->repeat_penalty = (float)d;
        break;
    case OPT_TOP_K:
        RLX_TRY(rlx_cli_parse_i64(name, v, 0, INT32_MAX, &k));
        o->top_k = (int32_t)k;
        break;
    case OPT_LAST_N:
        RLX_TRY(rlx_cli_parse_i64(name, v, 0, INT32_MAX, &k));
        o->repeat_last_n = (int32_t)k;
        break;
    case OPT_SEED:
        RLX_TRY(rlx_cli_parse_u64(name, v, &o->seed));
        break;
    }
    return NULL;
}

rlx_status rlx_cli_sampling_option(int argc, char **argv, int *i, rlx_sample_opts *o, bool *matched) {
    *matched = true;
    if (!strcmp(argv[*i], "--ignore-eos")) {
        o->ignore_eos = true;
        return NULL;
    }
    for (size_t j = 0; j < sizeof options / sizeof options[0]; j++) {
        if (!rlx_cli_is(argv[*i], options[j].name, true)) continue;
        const char *v;
        RLX_TRY(rlx_cli_take_value(argc, argv, i, options[j].name, &v));
        return set_option(o, options[j].which, options[j].name, v);
    }
    *matched = false;
    return NULL;
}
