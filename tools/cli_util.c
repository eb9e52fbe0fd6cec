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

rlx_status rlx_cli_parse_i32(const char *opt, const char *text, int32_t min, int32_t max, int32_t *out) {
    int64_t v = 0;
    RLX_TRY(rlx_cli_parse_i64(opt, text, min, max, &v));
    *out = (int32_t)v;
    return NULL;
}

rlx_status rlx_cli_parse_threads(const char *opt, const char *text, int *out) {
    int32_t v = 0;
    RLX_TRY(rlx_cli_parse_i32(opt, text, 0, RLX_CLI_MAX_THREADS, &v));
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

rlx_status rlx_cli_parse_size(const char *opt, const char *text, int64_t min, int64_t max, int64_t *out) {
    static const char units[] = "KMGT";
    size_t len = strlen(text);
    const char *unit = len > 0 ? strchr(units, toupper((unsigned char)text[len - 1])) : NULL;
    if (unit && !*unit) unit = NULL; /* strchr finds the terminating NUL too */
    char digits[32];
    size_t n = unit ? len - 1 : len;
    if (n == 0 || n >= sizeof digits || !isdigit((unsigned char)text[0]))
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a size (bytes, or a number with K, M, G or T)",
                          opt, text);
    memcpy(digits, text, n);
    digits[n] = '\0';
    uint64_t v;
    rlx_status s = rlx_cli_parse_u64(opt, digits, &v);
    if (s) {
        rlx_status_free(s);
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a size (bytes, or a number with K, M, G or T)",
                          opt, text);
    }
    int shift = unit ? 10 * (int)(unit - units + 1) : 0;
    if (v > (uint64_t)INT64_MAX >> shift || (int64_t)(v << shift) < min || (int64_t)(v << shift) > max)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: %s is out of range [%lld, %lld] bytes", opt, text,
                          (long long)min, (long long)max);
    *out = (int64_t)(v << shift);
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

/* The table entry of option id, or NULL for a short option without a long name. */
static const struct option *long_entry(const rlx_cli_parser *p, int id) {
    for (const struct option *o = p->longs; o && o->name; o++)
        if (o->val == id) return o;
    return NULL;
}

/* A long option as written, up to any "=VALUE", is its whole name (getopt_long also accepts any
 * unambiguous prefix; rlx does not). */
static bool spelled_in_full(const char *element, const struct option *o) {
    size_t n = strcspn(element + 2, "=");
    return o && strlen(o->name) == n && !strncmp(element + 2, o->name, n);
}

/* Names option id in p->name: as written, except that a short option listed in long_names is named
 * by its long name. False when the long option was abbreviated. */
static bool name_option(rlx_cli_parser *p, int id) {
    const struct option *o = long_entry(p, id);
    if (p->element[1] == '-') {
        if (!spelled_in_full(p->element, o)) return false;
    } else if (!(o && p->long_names && strchr(p->long_names, id))) {
        snprintf(p->name, sizeof p->name, "-%c", id);
        return true;
    }
    snprintf(p->name, sizeof p->name, "--%s", o->name);
    return true;
}

rlx_status rlx_cli_unknown(const rlx_cli_parser *p) {
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown option %s'%s'", p->or_argument ? "or extra argument " : "",
                      p->element);
}

rlx_status rlx_cli_next(rlx_cli_parser *p, int *opt) {
    if (!p->started) {
        /* "-": non-options come back in order (argv is not permuted); ":": a missing value is ':' */
        int len = snprintf(p->optstring, sizeof p->optstring, "-:%s", p->shorts ? p->shorts : "");
        if (len < 0 || (size_t)len >= sizeof p->optstring)
            return rlx_errorf(RLX_ERR_INTERNAL, "short options '%s' overflow the parser's buffer", p->shorts);
        optind = 0; /* glibc: a full reset, also of a cluster of short options left half read */
        opterr = 0;
        p->started = true;
    }
    int at = optind ? optind : 1; /* the element getopt reads next (it stays on a cluster until its end) */
    p->element = at < p->argc ? p->argv[at] : NULL;
    p->value = NULL;
    p->name[0] = '\0';
    if (p->element && !strcmp(p->element, "--")) return rlx_cli_unknown(p);
    int c = getopt_long(p->argc, p->argv, p->optstring, p->longs, NULL);
    *opt = c == -1 ? RLX_CLI_END : c;
    if (c == -1) return NULL;
    p->value = optarg;
    if (c == 1) return NULL;
    if (c == '?' || !name_option(p, c == ':' ? optopt : c)) return rlx_cli_unknown(p);
    if (c == ':') return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "option %s needs a value", p->name);
    return NULL;
}

rlx_status rlx_cli_parse(rlx_cli_parser *p, rlx_cli_apply_fn apply, void *args) {
    for (;;) {
        int opt;
        RLX_TRY(rlx_cli_next(p, &opt));
        if (opt == RLX_CLI_END) return NULL;
        RLX_TRY(apply(p, opt, args));
    }
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

rlx_status rlx_cli_model_option(const rlx_cli_parser *p, int opt, rlx_cli_model_args *a, bool *matched) {
    *matched = true;
    switch (opt) {
    case 'm':
        a->model = p->value;
        break;
    case RLX_OPT_TOKENS:
        free(a->ids);
        a->ids = NULL;
        RLX_TRY(rlx_cli_parse_ids(p->name, p->value, &a->ids, &a->n_ids));
        break;
    case RLX_OPT_BACKEND:
        /* the names rlx_runner_open takes; a typo is a bad argument, caught before any loading */
        if (strcmp(p->value, "cpu") && strcmp(p->value, "vulkan"))
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a backend (expected cpu or vulkan)", p->name,
                              p->value);
        a->opts.backend = p->value;
        break;
    case RLX_OPT_DEVICE:
        a->opts.device = p->value;
        break;
    case 't':
        return rlx_cli_parse_threads(p->name, p->value, &a->opts.n_threads);
    case 'c':
        return rlx_cli_parse_i32(p->name, p->value, 0, INT32_MAX, &a->opts.n_ctx);
    case RLX_OPT_KV_TYPE:
        if (!strcmp(p->value, "f16"))
            a->opts.kv_type = RLX_KV_TYPE_F16;
        else if (!strcmp(p->value, "f32"))
            a->opts.kv_type = RLX_KV_TYPE_F32;
        else
            return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: '%s' is not a K/V type (expected f16 or f32)", p->name,
                              p->value);
        break;
    default:
        *matched = false;
    }
    return NULL;
}

rlx_status rlx_cli_decode_ahead_option(const rlx_cli_parser *p, int opt, rlx_runner_opts *o, bool *matched) {
    *matched = opt == RLX_OPT_DECODE_AHEAD;
    return *matched ? rlx_cli_parse_i32(p->name, p->value, 1, RLX_DECODE_AHEAD_MAX, &o->decode_ahead) : NULL;
}

rlx_status rlx_cli_check_ids(rlx_cli_model_args *a, const rlx_runner *r) {
    int32_t vocab = rlx_runner_vocab_size(r);
    for (int32_t i = 0; a->ids && i < a->n_ids; i++) {
        if (a->ids[i] < vocab) continue;
        a->bad_ids = true;
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "--tokens: item %d, id %d, is outside the vocabulary [0, %d) of '%s'",
                          i + 1, a->ids[i], vocab, a->model);
    }
    return NULL;
}

rlx_status rlx_cli_model_check(const rlx_cli_model_args *a) {
    if (!a->model) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing -m PATH (a GGUF file or HF model directory)");
    if (!a->ids) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing --tokens IDS (comma-separated token ids)");
    return NULL;
}
