#include "cli_sampling.h"

#include <stdint.h>

rlx_status rlx_cli_sampling_option(const rlx_cli_parser *p, int opt, rlx_sample_opts *o, bool *matched) {
    double d = 0;
    *matched = true;
    switch (opt) {
    case RLX_OPT_TEMP:
        RLX_TRY(rlx_cli_parse_f64(p->name, p->value, 0, 1e6, &d));
        o->temperature = (float)d;
        break;
    case RLX_OPT_TOP_P:
        RLX_TRY(rlx_cli_parse_f64(p->name, p->value, 0, 1, &d));
        o->top_p = (float)d;
        break;
    case RLX_OPT_MIN_P:
        RLX_TRY(rlx_cli_parse_f64(p->name, p->value, 0, 1, &d));
        o->min_p = (float)d;
        break;
    case RLX_OPT_REPEAT_PENALTY:
        RLX_TRY(rlx_cli_parse_f64(p->name, p->value, 0, 1e6, &d));
        o->repeat_penalty = (float)d;
        break;
    case RLX_OPT_TOP_K:
        return rlx_cli_parse_i32(p->name, p->value, 0, INT32_MAX, &o->top_k);
    case RLX_OPT_REPEAT_LAST_N:
        RLX_TRY(rlx_cli_parse_i32(p->name, p->value, -1, INT32_MAX, &o->repeat_last_n));
        if (o->repeat_last_n == -1) o->repeat_last_n = INT32_MAX;
        break;
    case RLX_OPT_SEED:
        return rlx_cli_parse_u64(p->name, p->value, &o->seed);
    case RLX_OPT_IGNORE_EOS:
        o->ignore_eos = true;
        break;
    default:
        *matched = false;
    }
    return NULL;
}

void rlx_cli_sampling_finish(rlx_sample_opts *o) {
    if (o->repeat_last_n == 0) o->repeat_penalty = 1.0f; /* 1: off */
}

rlx_status rlx_cli_generation_option(const rlx_cli_parser *p, int opt, rlx_cli_model_args *m, rlx_sample_opts *o,
                                     bool *matched) {
    RLX_TRY(rlx_cli_model_option(p, opt, m, matched));
    if (!*matched) RLX_TRY(rlx_cli_decode_ahead_option(p, opt, &m->opts, matched));
    if (!*matched) RLX_TRY(rlx_cli_sampling_option(p, opt, o, matched));
    return NULL;
}
