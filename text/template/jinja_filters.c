/* Jinja filters (`x | trim`) and tests (`x is defined`) that chat templates use. Semantics:
 * jinja2 3.1's filters.py and tests.py, except tojson, which is transformers' override
 * (json.dumps with ensure_ascii=False and no HTML escaping). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "text/template/jinja_builtins.h"

typedef rlx_status (*filter_fn)(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out);

static rlx_status str_of(rlx_jinja_ctx *c, rlx_jv v, rlx_jv *out) {
    rlx_status s = rlx_jv_to_str(c->arena, v, out);
    return s ? rlx_status_annotate(s, "%s:%u:%u", c->origin, c->line, c->col) : NULL;
}

static rlx_status new_list(rlx_jinja_ctx *c, size_t cap, rlx_jv_list **out) {
    *out = rlx_jv_list_new(c->arena, cap);
    return *out ? NULL : rlx_jinja_oom(c);
}

static rlx_jv list_value(rlx_jv_list *l) { return (rlx_jv){.kind = RLX_JV_LIST, .list = l}; }

static bool arg_true(const rlx_jinja_args *a, size_t i, const char *name) {
    rlx_jv v;
    return rlx_jinja_arg(a, i, name, &v) && rlx_jv_truthy(v);
}

/* ---- sorting (stable, as Python's sort is) ---- */

typedef struct sort_ctx {
    rlx_jinja_ctx *c;
    bool case_sensitive;
    rlx_status err; /* the first comparison that failed */
} sort_ctx;

/* Lower-cases strings for case-insensitive sorts (jinja2's ignore_case). */
static rlx_jv sort_key(sort_ctx *s, rlx_jv v) {
    if (s->case_sensitive || v.kind != RLX_JV_STR || s->err) return v;
    rlx_jv out = v;
    s->err = rlx_jinja_str_case(s->c, v, RLX_JCASE_LOWER, &out);
    return out;
}

static int sort_cmp(sort_ctx *s, rlx_jv x, rlx_jv y) {
    int cmp = 0;
    if (!s->err) s->err = rlx_jinja_compare(s->c, x, y, &cmp);
    return cmp;
}

/* Merge sort of items by keys (both n long); tmp arrays come from the arena. */
static rlx_status merge_sort(sort_ctx *s, rlx_jv *items, rlx_jv *keys, size_t n, bool reverse) {
    rlx_jv *ti = rlx_jinja_alloc(s->c->arena, (n ? n : 1) * sizeof *ti);
    rlx_jv *tk = rlx_jinja_alloc(s->c->arena, (n ? n : 1) * sizeof *tk);
    if (!ti || !tk) return rlx_jinja_oom(s->c);
    for (size_t width = 1; width < n; width *= 2) {
        RLX_TRY(rlx_jinja_charge(s->c, n * 64));
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                int cmp = sort_cmp(s, keys[j], keys[i]);
                bool take_right = reverse ? cmp > 0 : cmp < 0;
                size_t k = take_right ? j++ : i++;
                ti[o] = items[k], tk[o++] = keys[k];
            }
            while (i < mid) ti[o] = items[i], tk[o++] = keys[i++];
            while (j < hi) ti[o] = items[j], tk[o++] = keys[j++];
        }
        memcpy(items, ti, n * sizeof *items);
        memcpy(keys, tk, n * sizeof *keys);
    }
    return s->err;
}

/* ---- filters ---- */

static rlx_status f_abs(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    if (in.kind == RLX_JV_FLOAT) *out = rlx_jv_float(fabs(in.f));
    else if (in.kind == RLX_JV_INT && in.i == INT64_MIN)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "abs: integer overflow (|%" PRId64 "| is not a 64-bit integer)",
                              in.i);
    else if (in.kind == RLX_JV_INT || in.kind == RLX_JV_BOOL)
        *out = rlx_jv_int(in.kind == RLX_JV_BOOL ? in.b : in.i < 0 ? -in.i : in.i);
    else return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "abs: expects a number, not '%s'", rlx_jv_type_name(in));
    return NULL;
}

static rlx_status f_case(rlx_jinja_ctx *c, rlx_jv in, rlx_jinja_case mode, rlx_jv *out) {
    RLX_TRY(str_of(c, in, &in));
    return rlx_jinja_str_case(c, in, mode, out);
}
static rlx_status f_upper(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return f_case(c, in, RLX_JCASE_UPPER, out);
}
static rlx_status f_lower(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return f_case(c, in, RLX_JCASE_LOWER, out);
}
static rlx_status f_title(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return f_case(c, in, RLX_JCASE_TITLE, out);
}
static rlx_status f_capitalize(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return f_case(c, in, RLX_JCASE_CAPITALIZE, out);
}

static rlx_status f_length(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    switch (in.kind) {
    case RLX_JV_UNDEFINED: *out = rlx_jv_int(0); return NULL;
    case RLX_JV_STR:
        *out = rlx_jv_int((int64_t)rlx_jv_utf8_len(in.s.p, in.s.n));
        return rlx_jinja_charge(c, in.s.n);
    case RLX_JV_LIST: *out = rlx_jv_int((int64_t)in.list->n); return NULL;
    case RLX_JV_DICT:
    case RLX_JV_NAMESPACE: *out = rlx_jv_int((int64_t)in.dict->n); return NULL;
    default:
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "length: a value of type '%s' has no length",
                              rlx_jv_type_name(in));
    }
}

static rlx_status f_default(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)c;
    rlx_jv def = rlx_jv_str("", 0);
    rlx_jinja_arg(a, 0, "default_value", &def);
    bool use = in.kind == RLX_JV_UNDEFINED || (arg_true(a, 1, "boolean") && !rlx_jv_truthy(in));
    *out = use ? def : in;
    return NULL;
}

static rlx_status pair(rlx_jinja_ctx *c, rlx_jv k, rlx_jv v, rlx_jv *out) {
    rlx_jv_list *p;
    RLX_TRY(new_list(c, 2, &p));
    p->items[0] = k;
    p->items[1] = v;
    p->n = 2;
    p->tuple = true;
    *out = list_value(p);
    return NULL;
}

static rlx_status f_items(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    rlx_jv_list *l;
    if (in.kind == RLX_JV_UNDEFINED) {
        RLX_TRY(new_list(c, 0, &l));
        *out = list_value(l);
        return NULL;
    }
    if (in.kind != RLX_JV_DICT)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "items: can only get item pairs from a mapping, not '%s'",
                              rlx_jv_type_name(in));
    RLX_TRY(new_list(c, in.dict->n, &l));
    for (size_t i = 0; i < in.dict->n; i++) RLX_TRY(pair(c, in.dict->keys[i], in.dict->vals[i], &l->items[l->n++]));
    *out = list_value(l);
    return NULL;
}

static rlx_status f_dictsort(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    if (in.kind != RLX_JV_DICT)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "dictsort: expects a mapping, not '%s'", rlx_jv_type_name(in));
    rlx_jv by = rlx_jv_cstr("key");
    rlx_jinja_arg(a, 1, "by", &by);
    bool by_value = by.kind == RLX_JV_STR && by.s.n == 5 && !memcmp(by.s.p, "value", 5);
    if (!by_value && !(by.kind == RLX_JV_STR && by.s.n == 3 && !memcmp(by.s.p, "key", 3)))
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "dictsort: 'by' must be 'key' or 'value'");
    sort_ctx s = {.c = c, .case_sensitive = arg_true(a, 0, "case_sensitive")};
    size_t n = in.dict->n;
    rlx_jv *items = rlx_jinja_alloc(c->arena, (n ? n : 1) * sizeof *items);
    rlx_jv *keys = rlx_jinja_alloc(c->arena, (n ? n : 1) * sizeof *keys);
    if (!items || !keys) return rlx_jinja_oom(c);
    for (size_t i = 0; i < n; i++) {
        RLX_TRY(pair(c, in.dict->keys[i], in.dict->vals[i], &items[i]));
        keys[i] = sort_key(&s, by_value ? in.dict->vals[i] : in.dict->keys[i]);
    }
    RLX_TRY(s.err);
    RLX_TRY(merge_sort(&s, items, keys, n, arg_true(a, 2, "reverse")));
    rlx_jv_list *l;
    RLX_TRY(new_list(c, 0, &l));
    l->items = items;
    l->n = l->cap = n;
    *out = list_value(l);
    return NULL;
}

static rlx_status f_first_last(rlx_jinja_ctx *c, rlx_jv in, bool last, rlx_jv *out) {
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &items, &n));
    *out = n ? items[last ? n - 1 : 0] : rlx_jv_undefined(NULL);
    return NULL;
}
static rlx_status f_first(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return f_first_last(c, in, false, out);
}
static rlx_status f_last(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return f_first_last(c, in, true, out);
}

/* Python's int(str) / float(str): surrounding whitespace allowed, nothing else. The text is copied
 * to the arena (it is bounded by the template memory, not by a fixed buffer). *range_error: the
 * number does not fit (strtoll / strtod set ERANGE). */
static rlx_status parse_number(rlx_jinja_ctx *c, rlx_jv s, bool want_int, double *d, int64_t *i, bool *ok,
                               bool *range_error) {
    *ok = *range_error = false;
    RLX_TRY(rlx_jinja_charge(c, s.s.n));
    char *buf = rlx_jinja_strndup(c->arena, s.s.p, s.s.n);
    if (!buf) return rlx_jinja_oom(c);
    const char *p = buf;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
    if (!*p || (want_int && !(*p == '-' || *p == '+' || (*p >= '0' && *p <= '9')))) return NULL;
    if (!want_int && (strchr(p, 'x') || strchr(p, 'X'))) return NULL; /* strtod reads hex; Python does not */
    char *end;
    errno = 0;
    if (want_int) *i = strtoll(p, &end, 10);
    else *d = strtod(p, &end);
    *range_error = errno == ERANGE && (want_int || isinf(*d));
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r' || *end == '\f' || *end == '\v') end++;
    *ok = end != p && *end == 0 && (size_t)(end - buf) == s.s.n;
    return NULL;
}

static rlx_status int_too_big(rlx_jinja_ctx *c, rlx_jv in) {
    if (in.kind == RLX_JV_FLOAT)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "int: %g does not fit in a 64-bit integer", in.f);
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "int: '%.*s' does not fit in a 64-bit integer",
                          (int)(in.s.n > 64 ? 64 : in.s.n), in.s.p);
}

/* float -> int64 truncates toward zero, as Python's int(); false when the result is no int64
 * (NaN, infinities, |d| >= 2**63), where a C cast would be undefined. */
static bool float_to_int(double d, int64_t *out) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;
    *out = (int64_t)d;
    return true;
}

/* jinja2's int filter: int(value), else int(float(value)), else the default. Python's ints have no
 * bound; ours are 64-bit, so a number past them is an error, never a clamped or default value.
 * NaN is jinja2's ValueError (the default); an infinity its OverflowError (an error). */
static rlx_status f_int(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv def = rlx_jv_int(0);
    rlx_jinja_arg(a, 0, "default", &def);
    double d = 0;
    int64_t i = 0;
    bool ok = false, range_error = false;
    *out = def;
    if (in.kind == RLX_JV_INT) *out = in;
    else if (in.kind == RLX_JV_BOOL) *out = rlx_jv_int(in.b);
    else if (in.kind == RLX_JV_FLOAT && !isnan(in.f)) {
        if (!float_to_int(in.f, &i)) return int_too_big(c, in);
        *out = rlx_jv_int(i);
    } else if (in.kind == RLX_JV_STR) {
        RLX_TRY(parse_number(c, in, true, &d, &i, &ok, &range_error));
        if (ok && range_error) return int_too_big(c, in);
        if (ok) {
            *out = rlx_jv_int(i);
            return NULL;
        }
        RLX_TRY(parse_number(c, in, false, &d, &i, &ok, &range_error));
        if (!ok || isnan(d)) return NULL;
        if (!float_to_int(d, &i)) return int_too_big(c, in);
        *out = rlx_jv_int(i);
    }
    return NULL;
}

static rlx_status f_float(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv def = rlx_jv_float(0.0);
    rlx_jinja_arg(a, 0, "default", &def);
    double d = 0;
    int64_t i = 0;
    bool ok = false, range_error = false;
    *out = def;
    if (rlx_jv_is_number(in)) *out = rlx_jv_float(rlx_jv_as_double(in));
    else if (in.kind == RLX_JV_STR) {
        RLX_TRY(parse_number(c, in, false, &d, &i, &ok, &range_error));
        if (ok) *out = rlx_jv_float(d); /* Python's float('1e999') is inf, too */
    }
    return NULL;
}

/* An attribute path as map/selectattr/join take it: "a.b" and integer parts index lists. */
static rlx_status attr_path(rlx_jinja_ctx *c, rlx_jv obj, rlx_jv path, rlx_jv *out) {
    if (path.kind == RLX_JV_INT) {
        *out = obj.kind == RLX_JV_LIST && path.i >= 0 && (uint64_t)path.i < obj.list->n ? obj.list->items[path.i]
                                                                                         : rlx_jv_undefined(NULL);
        return NULL;
    }
    if (path.kind != RLX_JV_STR)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "attribute name must be a string, not '%s'",
                              rlx_jv_type_name(path));
    RLX_TRY(rlx_jinja_charge(c, path.s.n));
    size_t start = 0;
    *out = obj;
    for (size_t i = 0; i <= path.s.n; i++) {
        if (i < path.s.n && path.s.p[i] != '.') continue;
        char *part = rlx_jinja_strndup(c->arena, path.s.p + start, i - start);
        if (!part) return rlx_jinja_oom(c);
        char *end;
        long idx = strtol(part, &end, 10);
        if (*part && !*end && out->kind == RLX_JV_LIST)
            *out = idx >= 0 && (size_t)idx < out->list->n ? out->list->items[idx] : rlx_jv_undefined(part);
        else if (out->kind == RLX_JV_UNDEFINED)
            return rlx_jinja_getattr(c, *out, part, out);
        else
            RLX_TRY(rlx_jinja_getattr(c, *out, part, out));
        start = i + 1;
    }
    return NULL;
}

static rlx_status f_join(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv sep = rlx_jv_str("", 0), attr;
    rlx_jinja_arg(a, 0, "d", &sep);
    RLX_TRY(str_of(c, sep, &sep));
    bool has_attr = rlx_jinja_arg(a, 1, "attribute", &attr) && attr.kind != RLX_JV_NONE;
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &items, &n));
    rlx_jinja_buf b = {.limit = c->lim.max_memory};
    rlx_status s = NULL;
    for (size_t i = 0; i < n && !s; i++) {
        rlx_jv v = items[i];
        if (has_attr && (s = attr_path(c, v, attr, &v))) break;
        if (i && !rlx_jinja_buf_append(&b, sep.s.p, sep.s.n)) s = rlx_jinja_oom(c);
        else if ((s = rlx_jv_write_str(&b, v))) s = rlx_status_annotate(s, "%s:%u:%u", c->origin, c->line, c->col);
    }
    char *r = s ? NULL : rlx_jinja_strndup(c->arena, b.p ? b.p : "", b.n);
    size_t len = b.n;
    rlx_jinja_buf_free(&b);
    if (s) return s;
    if (!r) return rlx_jinja_oom(c);
    *out = rlx_jv_str(r, len);
    return rlx_jinja_charge(c, len);
}

static rlx_status f_list(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &items, &n));
    rlx_jv_list *l;
    RLX_TRY(new_list(c, n, &l));
    for (size_t i = 0; i < n; i++) l->items[l->n++] = items[i];
    *out = list_value(l);
    return rlx_jinja_charge(c, n * sizeof(rlx_jv));
}

static rlx_status f_reverse(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &items, &n));
    if (in.kind == RLX_JV_STR) {
        char *r = rlx_jinja_alloc(c->arena, in.s.n + 1);
        if (!r) return rlx_jinja_oom(c);
        size_t o = 0;
        for (size_t i = n; i-- > 0;) {
            memcpy(r + o, items[i].s.p, items[i].s.n);
            o += items[i].s.n;
        }
        *out = rlx_jv_str(r, o);
        return NULL;
    }
    rlx_jv_list *l;
    RLX_TRY(new_list(c, n, &l));
    for (size_t i = n; i-- > 0;) l->items[l->n++] = items[i];
    *out = list_value(l);
    return NULL;
}

static rlx_status f_sort(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    const rlx_jv *src;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &src, &n));
    rlx_jv attr;
    bool has_attr = rlx_jinja_arg(a, 2, "attribute", &attr) && attr.kind != RLX_JV_NONE;
    sort_ctx s = {.c = c, .case_sensitive = arg_true(a, 1, "case_sensitive")};
    rlx_jv *items = rlx_jinja_alloc(c->arena, (n ? n : 1) * sizeof *items);
    rlx_jv *keys = rlx_jinja_alloc(c->arena, (n ? n : 1) * sizeof *keys);
    if (!items || !keys) return rlx_jinja_oom(c);
    for (size_t i = 0; i < n; i++) {
        items[i] = src[i];
        rlx_jv k = src[i];
        if (has_attr) RLX_TRY(attr_path(c, k, attr, &k));
        keys[i] = sort_key(&s, k);
    }
    RLX_TRY(s.err);
    RLX_TRY(merge_sort(&s, items, keys, n, arg_true(a, 0, "reverse")));
    rlx_jv_list *l;
    RLX_TRY(new_list(c, 0, &l));
    l->items = items;
    l->n = l->cap = n;
    *out = list_value(l);
    return NULL;
}

static rlx_status f_replace(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv old, repl, cnt;
    if (!rlx_jinja_arg(a, 0, "old", &old) || !rlx_jinja_arg(a, 1, "new", &repl))
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "replace: needs the old and the new string");
    int64_t count = -1;
    if (rlx_jinja_arg(a, 2, "count", &cnt) && cnt.kind != RLX_JV_NONE) {
        if (cnt.kind != RLX_JV_INT) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "replace: count must be an integer");
        count = cnt.i;
    }
    RLX_TRY(str_of(c, in, &in));
    RLX_TRY(str_of(c, old, &old));
    RLX_TRY(str_of(c, repl, &repl));
    return rlx_jinja_str_replace(c, in, old, repl, count, out);
}

static rlx_status f_safe(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)c, (void)a;
    *out = in; /* chat templates render without autoescaping: "safe" changes nothing */
    return NULL;
}

static rlx_status f_string(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    (void)a;
    return str_of(c, in, out);
}

static rlx_status f_trim(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv chars;
    bool has = rlx_jinja_arg(a, 0, "chars", &chars) && chars.kind != RLX_JV_NONE;
    if (has) RLX_TRY(str_of(c, chars, &chars));
    RLX_TRY(str_of(c, in, &in));
    return rlx_jinja_str_strip(c, in, has ? &chars : NULL, true, true, out);
}

static rlx_status f_tojson(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv_json_opts o = {.indent = -1, .ensure_ascii = arg_true(a, 0, "ensure_ascii"), .sort_keys = arg_true(a, 3, "sort_keys")};
    rlx_jv v;
    if (rlx_jinja_arg(a, 1, "indent", &v) && v.kind != RLX_JV_NONE) {
        if (v.kind != RLX_JV_INT || v.i < 0 || v.i > 64)
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "tojson: indent must be an integer in [0, 64]");
        o.indent = (int)v.i;
    }
    char *seps[2] = {NULL, NULL};
    if (rlx_jinja_arg(a, 2, "separators", &v) && v.kind != RLX_JV_NONE) {
        if (v.kind != RLX_JV_LIST || v.list->n != 2 || v.list->items[0].kind != RLX_JV_STR ||
            v.list->items[1].kind != RLX_JV_STR)
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "tojson: separators must be a pair of strings");
        for (int i = 0; i < 2; i++)
            if (!(seps[i] = rlx_jinja_strndup(c->arena, v.list->items[i].s.p, v.list->items[i].s.n)))
                return rlx_jinja_oom(c);
        o.item_sep = seps[0];
        o.key_sep = seps[1];
    }
    rlx_jinja_buf b = {.limit = c->lim.max_memory};
    rlx_status s = rlx_jv_write_json(&b, in, &o);
    char *r = s ? NULL : rlx_jinja_strndup(c->arena, b.p ? b.p : "", b.n);
    size_t len = b.n;
    rlx_jinja_buf_free(&b);
    if (s) return rlx_status_annotate(s, "%s:%u:%u", c->origin, c->line, c->col);
    if (!r) return rlx_jinja_oom(c);
    *out = rlx_jv_str(r, len);
    return rlx_jinja_charge(c, len);
}

static rlx_status f_attr(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    rlx_jv name;
    if (!rlx_jinja_arg(a, 0, "name", &name) || name.kind != RLX_JV_STR)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "attr: needs an attribute name");
    char *n = rlx_jinja_strndup(c->arena, name.s.p, name.s.n);
    if (!n) return rlx_jinja_oom(c);
    return rlx_jinja_getattr(c, in, n, out);
}

/* A filter or test named by a string argument, for map / select / reject. */
static rlx_status lookup_named(rlx_jinja_ctx *c, rlx_jv name, bool test, int *id) {
    char buf[64];
    if (name.kind != RLX_JV_STR || name.s.n >= sizeof buf)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "expected a %s name", test ? "test" : "filter");
    memcpy(buf, name.s.p, name.s.n);
    buf[name.s.n] = 0;
    *id = test ? rlx_jinja_test_find(buf) : rlx_jinja_filter_find(buf);
    if (*id < 0) return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED, "unknown or unsupported %s '%s'", test ? "test" : "filter", buf);
    return NULL;
}

/* args minus the first `skip` positional ones (what map/select pass on). */
static rlx_jinja_args shift_args(const rlx_jinja_args *a, size_t skip) {
    rlx_jinja_args r = *a;
    r.pos = a->n_pos > skip ? a->pos + skip : NULL;
    r.n_pos = a->n_pos > skip ? a->n_pos - skip : 0;
    return r;
}

static rlx_status f_map(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &items, &n));
    rlx_jv attr, def;
    bool by_attr = a->n_pos == 0 && rlx_jinja_arg(a, SIZE_MAX, "attribute", &attr);
    bool has_def = by_attr && rlx_jinja_arg(a, SIZE_MAX, "default", &def);
    int id = -1;
    rlx_jinja_args rest = shift_args(a, 1);
    if (!by_attr) {
        if (a->n_pos == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "map: needs a filter name or attribute=");
        RLX_TRY(lookup_named(c, a->pos[0], false, &id));
    }
    rlx_jv_list *l;
    RLX_TRY(new_list(c, n, &l));
    for (size_t i = 0; i < n; i++) {
        rlx_jv v;
        if (by_attr) {
            RLX_TRY(attr_path(c, items[i], attr, &v));
            if (v.kind == RLX_JV_UNDEFINED && has_def) v = def;
        } else {
            RLX_TRY(rlx_jinja_filter_apply(c, id, items[i], &rest, &v));
        }
        l->items[l->n++] = v;
    }
    *out = list_value(l);
    return NULL;
}

/* select / reject / selectattr / rejectattr: keep items whose test (or truthiness) gives `keep`. */
static rlx_status filter_items(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, bool by_attr, bool keep,
                               rlx_jv *out) {
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, in, &items, &n));
    size_t first = by_attr ? 1 : 0;
    if (by_attr && a->n_pos == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "selectattr/rejectattr: needs an attribute");
    int id = -1;
    if (a->n_pos > first) RLX_TRY(lookup_named(c, a->pos[first], true, &id));
    rlx_jinja_args rest = shift_args(a, first + 1);
    rlx_jv_list *l;
    RLX_TRY(new_list(c, n, &l));
    for (size_t i = 0; i < n; i++) {
        rlx_jv v = items[i];
        if (by_attr) RLX_TRY(attr_path(c, v, a->pos[0], &v));
        bool r;
        if (id >= 0) RLX_TRY(rlx_jinja_test_apply(c, id, v, &rest, &r));
        else r = rlx_jv_truthy(v);
        if (r == keep) l->items[l->n++] = items[i];
    }
    *out = list_value(l);
    return NULL;
}
static rlx_status f_select(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    return filter_items(c, in, a, false, true, out);
}
static rlx_status f_reject(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    return filter_items(c, in, a, false, false, out);
}
static rlx_status f_selectattr(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    return filter_items(c, in, a, true, true, out);
}
static rlx_status f_rejectattr(rlx_jinja_ctx *c, rlx_jv in, const rlx_jinja_args *a, rlx_jv *out) {
    return filter_items(c, in, a, true, false, out);
}

#define ANY_POS SIZE_MAX
static const struct {
    const char *name;
    filter_fn fn;
    size_t max_pos;
    const char *kw[5];
} filters[] = {
    {"abs", f_abs, 0, {NULL}},
    {"attr", f_attr, 1, {"name", NULL}},
    {"capitalize", f_capitalize, 0, {NULL}},
    {"count", f_length, 0, {NULL}},
    {"d", f_default, 2, {"default_value", "boolean", NULL}},
    {"default", f_default, 2, {"default_value", "boolean", NULL}},
    {"dictsort", f_dictsort, 3, {"case_sensitive", "by", "reverse", NULL}},
    {"first", f_first, 0, {NULL}},
    {"float", f_float, 1, {"default", NULL}},
    {"int", f_int, 1, {"default", NULL}},
    {"items", f_items, 0, {NULL}},
    {"join", f_join, 2, {"d", "attribute", NULL}},
    {"last", f_last, 0, {NULL}},
    {"length", f_length, 0, {NULL}},
    {"list", f_list, 0, {NULL}},
    {"lower", f_lower, 0, {NULL}},
    {"map", f_map, ANY_POS, {"attribute", "default", NULL}},
    {"reject", f_reject, ANY_POS, {NULL}},
    {"rejectattr", f_rejectattr, ANY_POS, {NULL}},
    {"replace", f_replace, 3, {"old", "new", "count", NULL}},
    {"reverse", f_reverse, 0, {NULL}},
    {"safe", f_safe, 0, {NULL}},
    {"select", f_select, ANY_POS, {NULL}},
    {"selectattr", f_selectattr, ANY_POS, {NULL}},
    {"sort", f_sort, 3, {"reverse", "case_sensitive", "attribute", NULL}},
    {"string", f_string, 0, {NULL}},
    {"title", f_title, 0, {NULL}},
    {"tojson", f_tojson, 4, {"ensure_ascii", "indent", "separators", "sort_keys", NULL}},
    {"trim", f_trim, 1, {"chars", NULL}},
    {"upper", f_upper, 0, {NULL}},
};
#define N_FILTERS (sizeof filters / sizeof filters[0])

int rlx_jinja_filter_find(const char *name) {
    for (size_t i = 0; i < N_FILTERS; i++)
        if (!strcmp(filters[i].name, name)) return (int)i;
    return -1;
}

static bool in_names(const char *const *names, const char *name) {
    for (; *names; names++)
        if (!strcmp(*names, name)) return true;
    return false;
}

bool rlx_jinja_filter_is_jinja(const char *name) {
    static const char *const jinja[] = {"batch", "center", "e", "escape", "filesizeformat", "forceescape", "format",
                                        "groupby", "indent", "max", "min", "pprint", "random", "round", "slice",
                                        "striptags", "sum", "truncate", "unique", "urlencode", "urlize", "wordcount",
                                        "wordwrap", "xmlattr", NULL};
    return in_names(jinja, name);
}

rlx_status rlx_jinja_filter_apply(rlx_jinja_ctx *c, int id, rlx_jv in, const rlx_jinja_args *args, rlx_jv *out) {
    if (id < 0 || (size_t)id >= N_FILTERS)
        return rlx_jinja_fail(c, RLX_ERR_INTERNAL, "internal: filter %d does not exist", id);
    char what[48];
    snprintf(what, sizeof what, "filter '%s'", filters[id].name);
    RLX_TRY(rlx_jinja_check_args(c, what, args, filters[id].max_pos, filters[id].kw));
    /* map('map', 'map', ...) applies filters inside filters: bound that recursion like any other */
    RLX_TRY(rlx_jinja_nest(c));
    rlx_status s = filters[id].fn(c, in, args, out);
    rlx_jinja_unnest(c);
    return s;
}

/* ---- tests ---- */

typedef enum {
    T_BOOLEAN, T_CALLABLE, T_DEFINED, T_DIVISIBLEBY, T_EQ, T_EVEN, T_FALSE, T_FLOAT, T_GE, T_GT, T_IN, T_INTEGER,
    T_ITERABLE, T_LE, T_LOWER, T_LT, T_MAPPING, T_NE, T_NONE, T_NUMBER, T_ODD, T_SAMEAS, T_SEQUENCE, T_STRING,
    T_TRUE, T_UNDEFINED, T_UPPER,
} test_kind;

static const struct {
    const char *name;
    test_kind kind;
} tests[] = {
    {"boolean", T_BOOLEAN}, {"callable", T_CALLABLE}, {"defined", T_DEFINED}, {"divisibleby", T_DIVISIBLEBY},
    {"eq", T_EQ}, {"equalto", T_EQ}, {"==", T_EQ}, {"even", T_EVEN}, {"false", T_FALSE}, {"float", T_FLOAT},
    {"ge", T_GE}, {">=", T_GE}, {"gt", T_GT}, {"greaterthan", T_GT}, {">", T_GT}, {"in", T_IN},
    {"integer", T_INTEGER}, {"iterable", T_ITERABLE}, {"le", T_LE}, {"<=", T_LE}, {"lower", T_LOWER},
    {"lt", T_LT}, {"lessthan", T_LT}, {"<", T_LT}, {"mapping", T_MAPPING}, {"ne", T_NE}, {"!=", T_NE},
    {"none", T_NONE}, {"number", T_NUMBER}, {"odd", T_ODD}, {"sameas", T_SAMEAS}, {"sequence", T_SEQUENCE},
    {"string", T_STRING}, {"true", T_TRUE}, {"undefined", T_UNDEFINED}, {"upper", T_UPPER},
};
#define N_TESTS (sizeof tests / sizeof tests[0])

int rlx_jinja_test_find(const char *name) {
    for (size_t i = 0; i < N_TESTS; i++)
        if (!strcmp(tests[i].name, name)) return (int)i;
    return -1;
}

bool rlx_jinja_test_is_jinja(const char *name) {
    static const char *const jinja[] = {"escaped", "filter", "test", NULL};
    return in_names(jinja, name);
}

static rlx_status test_int(rlx_jinja_ctx *c, const char *what, rlx_jv v, int64_t *out) {
    if (v.kind == RLX_JV_INT || v.kind == RLX_JV_BOOL) {
        *out = v.kind == RLX_JV_BOOL ? v.b : v.i;
        return NULL;
    }
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "test '%s' expects an integer, not '%s'", what, rlx_jv_type_name(v));
}

/* `is lower` / `is upper`: Python's islower/isupper over ASCII letters (at least one cased). */
static bool all_case(rlx_jv v, bool upper) {
    if (v.kind != RLX_JV_STR) return false;
    bool cased = false;
    for (size_t i = 0; i < v.s.n; i++) {
        char ch = v.s.p[i];
        if ((ch >= 'a' && ch <= 'z' && upper) || (ch >= 'A' && ch <= 'Z' && !upper)) return false;
        cased = cased || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    }
    return cased;
}

static rlx_status order_test(rlx_jinja_ctx *c, test_kind k, rlx_jv in, rlx_jv other, bool *out) {
    int cmp;
    RLX_TRY(rlx_jinja_compare(c, in, other, &cmp));
    *out = k == T_LT ? cmp < 0 : k == T_LE ? cmp <= 0 : k == T_GT ? cmp > 0 : cmp >= 0;
    return NULL;
}

rlx_status rlx_jinja_test_apply(rlx_jinja_ctx *c, int id, rlx_jv in, const rlx_jinja_args *args, bool *out) {
    if (id < 0 || (size_t)id >= N_TESTS)
        return rlx_jinja_fail(c, RLX_ERR_INTERNAL, "internal: test %d does not exist", id);
    test_kind k = tests[id].kind;
    bool takes_arg = k == T_DIVISIBLEBY || k == T_EQ || k == T_NE || k == T_GE || k == T_GT || k == T_LE ||
                     k == T_LT || k == T_IN || k == T_SAMEAS;
    char what[48];
    snprintf(what, sizeof what, "test '%s'", tests[id].name);
    RLX_TRY(rlx_jinja_check_args(c, what, args, takes_arg ? 1 : 0, NULL));
    rlx_jv other = rlx_jv_undefined(NULL);
    if (takes_arg && !rlx_jinja_arg(args, 0, NULL, &other))
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s needs an argument", what);
    int64_t x = 0, y = 0;
    switch (k) {
    case T_BOOLEAN: *out = in.kind == RLX_JV_BOOL; break;
    /* jinja2's Undefined defines __call__ (to raise), so Python's callable() says yes */
    case T_CALLABLE: *out = in.kind == RLX_JV_MACRO || in.kind == RLX_JV_FUNC || in.kind == RLX_JV_UNDEFINED; break;
    case T_DEFINED: *out = in.kind != RLX_JV_UNDEFINED; break;
    case T_UNDEFINED: *out = in.kind == RLX_JV_UNDEFINED; break;
    case T_DIVISIBLEBY:
        RLX_TRY(test_int(c, tests[id].name, in, &x));
        RLX_TRY(test_int(c, tests[id].name, other, &y));
        if (y == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "divisibleby(0)");
        *out = y == -1 || x % y == 0;
        break;
    case T_EQ: return rlx_jinja_equal(c, in, other, out);
    case T_NE:
        RLX_TRY(rlx_jinja_equal(c, in, other, out));
        *out = !*out;
        break;
    case T_EVEN:
    case T_ODD:
        RLX_TRY(test_int(c, tests[id].name, in, &x));
        *out = (x % 2 == 0) == (k == T_EVEN);
        break;
    case T_FALSE: *out = in.kind == RLX_JV_BOOL && !in.b; break;
    case T_TRUE: *out = in.kind == RLX_JV_BOOL && in.b; break;
    case T_FLOAT: *out = in.kind == RLX_JV_FLOAT; break;
    case T_INTEGER: *out = in.kind == RLX_JV_INT; break;
    case T_NUMBER: *out = rlx_jv_is_number(in); break;
    case T_GE:
    case T_GT:
    case T_LE:
    case T_LT: return order_test(c, k, in, other, out);
    case T_IN: return rlx_jinja_contains(c, other, in, out);
    /* jinja2: an Undefined iterates (as empty) and has a length, so it is iterable and a sequence */
    case T_ITERABLE:
        *out = in.kind == RLX_JV_LIST || in.kind == RLX_JV_DICT || in.kind == RLX_JV_STR || in.kind == RLX_JV_UNDEFINED;
        break;
    case T_SEQUENCE:
        *out = in.kind == RLX_JV_LIST || in.kind == RLX_JV_DICT || in.kind == RLX_JV_STR || in.kind == RLX_JV_UNDEFINED;
        break;
    case T_LOWER: *out = all_case(in, false); break;
    case T_UPPER: *out = all_case(in, true); break;
    case T_MAPPING: *out = in.kind == RLX_JV_DICT; break;
    case T_NONE: *out = in.kind == RLX_JV_NONE; break;
    case T_SAMEAS:
        /* Python identity: equal singletons and small values; the same container object */
        if (in.kind != other.kind) *out = false;
        else if (in.kind == RLX_JV_LIST) *out = in.list == other.list;
        else if (in.kind == RLX_JV_DICT || in.kind == RLX_JV_NAMESPACE) *out = in.dict == other.dict;
        else return rlx_jinja_equal(c, in, other, out);
        break;
    case T_STRING: *out = in.kind == RLX_JV_STR; break;
    }
    return NULL;
}
