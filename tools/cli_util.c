#include "cli_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *skip_spaces(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

rlx_status rlx_cli_parse_ids(const char *opt, const char *text, int32_t **out, int32_t *n) {
    if (!*skip_spaces(text)) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: the id list is empty", opt);
    int32_t cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ',';
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "%s: cannot allocate %d ids", opt, cap);
    int32_t count = 0;
    const char *p = text;
    for (;;) {
        const char *item = skip_spaces(p);
        const char *end = item;
        while (*end && *end != ',') end++;
        int len = (int)(end - item);
        while (len > 0 && (item[len - 1] == ' ' || item[len - 1] == '\t')) len--;
        rlx_status s = NULL;
        if (len == 0)
            s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s': item %d is empty, expected an id", opt, text,
                           count + 1);
        else if (!isdigit((unsigned char)item[0]))
            s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s': item %d '%.*s' is not a token id (ids are >= 0)",
                           opt, text, count + 1, len, item);
        if (!s) {
            errno = 0;
            char *stop;
            long long v = strtoll(item, &stop, 10);
            if (stop != item + len)
                s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s': item %d '%.*s' is not a whole number", opt,
                               text, count + 1, len, item);
            else if (errno == ERANGE || v > INT32_MAX)
                s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s': item %d '%.*s' is out of range [0, %d]", opt,
                               text, count + 1, len, item, INT32_MAX);
            else
                ids[count++] = (int32_t)v;
        }
        if (s) {
            free(ids);
            return s;
        }
        if (!*end) break;
        p = end + 1;
    }
    *out = ids;
    *n = count;
    return NULL;
}

/* strtoll/strtoull accept leading spaces and a sign; options are stricter. */
static bool looks_decimal(const char *text, bool allow_minus) {
    const char *p = text;
    if (*p == '-' && allow_minus) p++;
    return isdigit((unsigned char)*p);
}

rlx_status rlx_cli_parse_i64(const char *opt, const char *text, int64_t min, int64_t max, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = looks_decimal(text, true) ? strtoll(text, &end, 10) : 0;
    if (!end || *end) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a whole number", opt, text);
    if (errno == ERANGE || v < min || v > max)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %s is out of range [%lld, %lld]", opt, text,
                          (long long)min, (long long)max);
    *out = v;
    return NULL;
}

rlx_status rlx_cli_parse_u64(const char *opt, const char *text, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = looks_decimal(text, false) ? strtoull(text, &end, 10) : 0;
    if (!end || *end)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a whole number >= 0", opt, text);
    if (errno == ERANGE)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %s is out of range [0, %llu]", opt, text,
                          (unsigned long long)UINT64_MAX);
    *out = v;
    return NULL;
}

rlx_status rlx_cli_parse_f64(const char *opt, const char *text, double min, double max, double *out) {
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || isspace((unsigned char)*text))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a number", opt, text);
    if (!isfinite(v)) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %s is not a finite number", opt, text);
    if (v < min || v > max)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %s is out of range [%g, %g]", opt, text, min, max);
    *out = v;
    return NULL;
}

bool rlx_cli_is(const char *arg, const char *name, bool takes_value) {
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0) return false;
    return arg[n] == '\0' || (takes_value && arg[n] == '=' && name[1] == '-');
}

rlx_status rlx_cli_take_value(int argc, char **argv, int *i, const char *name, const char **value) {
    const char *eq = strchr(argv[*i], '=');
    if (eq && name[1] == '-') {
        *value = eq + 1;
        return NULL;
    }
    if (*i + 1 >= argc) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "option %s needs a value", name);
    *value = argv[++*i];
    return NULL;
}

int rlx_cli_fail(const char *cmd, rlx_status s, bool usage) {
    /* one line per error, whatever the message (the IR verifier lists one problem per line) */
    fprintf(stderr, "rlx %s: ", cmd);
    for (const char *m = rlx_status_message(s); *m; m++) {
        if (*m != '\n') fputc(*m, stderr);
        else if (m[1]) fputs("; ", stderr);
    }
    fputc('\n', stderr);
    int code = usage && rlx_status_code(s) == RLX_ERR_INVALID_ARGUMENT ? RLX_EXIT_USAGE : RLX_EXIT_RUNTIME;
    if (code == RLX_EXIT_USAGE) fprintf(stderr, "run 'rlx %s --help' for its options\n", cmd);
    rlx_status_free(s);
    return code;
}

double rlx_cli_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

rlx_status rlx_cli_model_option(int argc, char **argv, int *i, rlx_cli_model_args *a, bool *matched) {
    const char *arg = argv[*i], *v = NULL;
    int64_t n = 0;
    *matched = true;
    if (rlx_cli_is(arg, "-m", true) || rlx_cli_is(arg, "--model", true)) {
        RLX_TRY(rlx_cli_take_value(argc, argv, i, arg[1] == '-' ? "--model" : "-m", &a->model));
    } else if (rlx_cli_is(arg, "--tokens", true)) {
        RLX_TRY(rlx_cli_take_value(argc, argv, i, "--tokens", &v));
        free(a->ids);
        a->ids = NULL;
        RLX_TRY(rlx_cli_parse_ids("--tokens", v, &a->ids, &a->n_ids));
    } else if (rlx_cli_is(arg, "--backend", true)) {
        RLX_TRY(rlx_cli_take_value(argc, argv, i, "--backend", &a->opts.backend));
    } else if (rlx_cli_is(arg, "--device", true)) {
        RLX_TRY(rlx_cli_take_value(argc, argv, i, "--device", &a->opts.device));
    } else if (rlx_cli_is(arg, "-t", true) || rlx_cli_is(arg, "--threads", true)) {
        RLX_TRY(rlx_cli_take_value(argc, argv, i, "--threads", &v));
        RLX_TRY(rlx_cli_parse_i64("--threads", v, 0, 1024, &n));
        a->opts.n_threads = (int)n;
    } else if (rlx_cli_is(arg, "--ctx", true)) {
        RLX_TRY(rlx_cli_take_value(argc, argv, i, "--ctx", &v));
        RLX_TRY(rlx_cli_parse_i64("--ctx", v, 0, INT32_MAX, &n));
        a->opts.n_ctx = (int32_t)n;
    } else {
        *matched = false;
    }
    return NULL;
}

rlx_status rlx_cli_decode_ahead_option(int argc, char **argv, int *i, rlx_runner_opts *o, bool *matched) {
    *matched = rlx_cli_is(argv[*i], "--decode-ahead", true);
    if (!*matched) return NULL;
    const char *v = NULL;
    int64_t n = 0;
    RLX_TRY(rlx_cli_take_value(argc, argv, i, "--decode-ahead", &v));
    RLX_TRY(rlx_cli_parse_i64("--decode-ahead", v, 1, RLX_DECODE_AHEAD_MAX, &n));
    o->decode_ahead = (int32_t)n;
    return NULL;
}

rlx_status rlx_cli_model_check(const rlx_cli_model_args *a) {
    if (!a->model) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -m PATH (a GGUF file or HF model directory)");
    if (!a->ids) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing --tokens IDS (comma-separated token ids)");
    return NULL;
}
