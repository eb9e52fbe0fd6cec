/* Python str and dict methods as chat templates call them (`content.split('</think>')[-1]`,
 * `message.get('reasoning')`, ...), and the global functions range, namespace, dict,
 * raise_exception and strftime_now. Semantics: Python 3's str/dict documentation, jinja2's
 * defaults.py, and transformers' chat-template globals. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "text/template/jinja_builtins.h"

/* ---- argument helpers ---- */

bool rlx_jinja_arg(const rlx_jinja_args *a, size_t i, const char *name, rlx_jv *out) {
    if (i < a->n_pos) {
        *out = a->pos[i];
        return true;
    }
    for (size_t j = 0; name && j < a->n_kw; j++)
        if (!strcmp(a->kw_names[j], name)) {
            *out = a->kw[j];
            return true;
        }
    return false;
}

rlx_status rlx_jinja_check_args(rlx_jinja_ctx *c, const char *what, const rlx_jinja_args *a, size_t max_pos,
                                const char *const *names) {
    if (a->n_pos > max_pos)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s takes at most %zu positional arguments (%zu given)", what,
                              max_pos, a->n_pos);
    for (size_t j = 0; j < a->n_kw; j++) {
        bool known = false;
        for (size_t k = 0; names && names[k] && !known; k++) known = !strcmp(names[k], a->kw_names[j]);
        if (!known)
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s got an unexpected keyword argument '%s'", what,
                                  a->kw_names[j]);
    }
    return NULL;
}

static rlx_status need_str(rlx_jinja_ctx *c, const char *what, rlx_jv v) {
    if (v.kind == RLX_JV_STR) return NULL;
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s expects a string, not '%s'", what, rlx_jv_type_name(v));
}

static rlx_status need_int(rlx_jinja_ctx *c, const char *what, rlx_jv v, int64_t *out) {
    if (v.kind == RLX_JV_INT || v.kind == RLX_JV_BOOL) {
        *out = v.kind == RLX_JV_BOOL ? v.b : v.i;
        return NULL;
    }
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s expects an integer, not '%s'", what, rlx_jv_type_name(v));
}

static rlx_status new_str(rlx_jinja_ctx *c, size_t n, char **out) {
    if (n == SIZE_MAX || !(*out = rlx_jinja_alloc(c->arena, n + 1))) return rlx_jinja_oom(c);
    return rlx_jinja_charge(c, n);
}

static rlx_status make_list(rlx_jinja_ctx *c, size_t cap, rlx_jv_list **out) {
    *out = rlx_jv_list_new(c->arena, cap);
    return *out ? NULL : rlx_jinja_oom(c);
}

static rlx_status push(rlx_jinja_ctx *c, rlx_jv_list *l, rlx_jv v) {
    return rlx_jv_list_push(c->arena, l, v) ? NULL : rlx_jinja_oom(c);
}

static rlx_jv list_value(rlx_jv_list *l) { return (rlx_jv){.kind = RLX_JV_LIST, .list = l}; }

/* ---- string operations ---- */

static char ascii_upper(char ch) { return ch >= 'a' && ch <= 'z' ? (char)(ch - 32) : ch; }
static char ascii_lower(char ch) { return ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch; }

rlx_status rlx_jinja_str_case(rlx_jinja_ctx *c, rlx_jv s, rlx_jinja_case mode, rlx_jv *out) {
    char *r;
    RLX_TRY(new_str(c, s.s.n, &r));
    bool word_start = true;
    for (size_t i = 0; i < s.s.n; i++) {
        char ch = s.s.p[i];
        switch (mode) {
        case RLX_JCASE_UPPER: r[i] = ascii_upper(ch); break;
        case RLX_JCASE_LOWER: r[i] = ascii_lower(ch); break;
        case RLX_JCASE_CAPITALIZE: r[i] = i == 0 ? ascii_upper(ch) : ascii_lower(ch); break;
        case RLX_JCASE_TITLE: {
            /* jinja2's title: a word starts after whitespace or one of - ( { [ < */
            bool sep = ch && strchr(" \t\n\r\f\v-({[<", ch);
            r[i] = sep ? ch : word_start ? ascii_upper(ch) : ascii_lower(ch);
            word_start = sep;
            break;
        }
        }
    }
    *out = rlx_jv_str(r, s.s.n);
    return NULL;
}

static bool in_chars(const rlx_jv *chars, uint32_t cp) {
    if (!chars) return rlx_jv_is_space(cp);
    for (size_t i = 0, len; i < chars->s.n; i += len)
        if (rlx_jv_utf8_decode(chars->s.p + i, chars->s.n - i, &len) == cp) return true;
    return false;
}

rlx_status rlx_jinja_str_strip(rlx_jinja_ctx *c, rlx_jv s, const rlx_jv *chars, bool left, bool right, rlx_jv *out) {
    RLX_TRY(rlx_jinja_charge(c, s.s.n));
    size_t start = 0, end = s.s.n, len;
    if (left)
        while (start < end && in_chars(chars, rlx_jv_utf8_decode(s.s.p + start, end - start, &len))) start += len;
    if (right)
        while (end > start) {
            size_t k = end - 1;
            while (k > start && ((unsigned char)s.s.p[k] & 0xC0) == 0x80) k--;
            if (!in_chars(chars, rlx_jv_utf8_decode(s.s.p + k, end - k, &len)) || k + len != end) break;
            end = k;
        }
    *out = rlx_jv_str(s.s.p + start, end - start);
    return NULL;
}

static bool match_at(rlx_jv s, size_t i, rlx_jv sub) {
    return sub.s.n <= s.s.n - i && memcmp(s.s.p + i, sub.s.p, sub.s.n) == 0;
}

rlx_status rlx_jinja_str_replace(rlx_jinja_ctx *c, rlx_jv s, rlx_jv old, rlx_jv repl, int64_t count, rlx_jv *out) {
    RLX_TRY(rlx_jinja_charge(c, s.s.n));
    rlx_jinja_buf b = {.limit = c->lim.max_memory};
    bool ok = true;
    int64_t done = 0;
    if (old.s.n == 0) {
        /* Python inserts the replacement before every code point and at the end */
        size_t len;
        for (size_t i = 0; ok && i <= s.s.n; i += len) {
            len = i < s.s.n ? 0 : 1;
            if (count < 0 || done < count) ok = rlx_jinja_buf_append(&b, repl.s.p, repl.s.n), done++;
            if (i < s.s.n) {
                rlx_jv_utf8_decode(s.s.p + i, s.s.n - i, &len);
                ok = ok && rlx_jinja_buf_append(&b, s.s.p + i, len);
            }
        }
    } else {
        for (size_t i = 0; ok && i < s.s.n;) {
            if ((count < 0 || done < count) && match_at(s, i, old)) {
                ok = rlx_jinja_buf_append(&b, repl.s.p, repl.s.n);
                i += old.s.n;
                done++;
            } else {
                ok = rlx_jinja_buf_putc(&b, s.s.p[i++]);
            }
        }
    }
    char *r = ok ? rlx_jinja_strndup(c->arena, b.p ? b.p : "", b.n) : NULL;
    size_t n = b.n;
    rlx_jinja_buf_free(&b);
    if (!r) return rlx_jinja_oom(c);
    *out = rlx_jv_str(r, n);
    return rlx_jinja_charge(c, n);
}

/* str.split(sep=None, maxsplit=-1): with no separator, runs of whitespace split and ends are
 * dropped; with one, every occurrence splits. */
static rlx_status str_split(rlx_jinja_ctx *c, rlx_jv s, const rlx_jinja_args *a, rlx_jv *out) {
    static const char *const kw[] = {"sep", "maxsplit", NULL};
    RLX_TRY(rlx_jinja_check_args(c, "str.split()", a, 2, kw));
    rlx_jv sep = rlx_jv_none(), maxv;
    int64_t max = -1;
    rlx_jinja_arg(a, 0, "sep", &sep);
    if (rlx_jinja_arg(a, 1, "maxsplit", &maxv)) RLX_TRY(need_int(c, "str.split() maxsplit", maxv, &max));
    RLX_TRY(rlx_jinja_charge(c, s.s.n));
    rlx_jv_list *l;
    RLX_TRY(make_list(c, 0, &l));
    size_t i = 0, len;
    if (sep.kind == RLX_JV_NONE) {
        for (;;) {
            while (i < s.s.n && rlx_jv_is_space(rlx_jv_utf8_decode(s.s.p + i, s.s.n - i, &len))) i += len;
            if (i >= s.s.n) break;
            size_t start = i;
            if (max >= 0 && (int64_t)l->n >= max) {
                size_t end = s.s.n;
                rlx_jv rest;
                RLX_TRY(rlx_jinja_str_strip(c, rlx_jv_str(s.s.p + start, end - start), NULL, false, true, &rest));
                RLX_TRY(push(c, l, rest));
                break;
            }
            while (i < s.s.n && !rlx_jv_is_space(rlx_jv_utf8_decode(s.s.p + i, s.s.n - i, &len))) i += len;
            RLX_TRY(push(c, l, rlx_jv_str(s.s.p + start, i - start)));
        }
    } else {
        RLX_TRY(need_str(c, "str.split() separator", sep));
        if (sep.s.n == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "str.split(): empty separator");
        size_t start = 0;
        while (i + sep.s.n <= s.s.n && (max < 0 || (int64_t)l->n < max)) {
            if (match_at(s, i, sep)) {
                RLX_TRY(push(c, l, rlx_jv_str(s.s.p + start, i - start)));
                i += sep.s.n;
                start = i;
            } else {
                i++;
            }
        }
        RLX_TRY(push(c, l, rlx_jv_str(s.s.p + start, s.s.n - start)));
    }
    *out = list_value(l);
    return NULL;
}

/* str.rsplit(sep, maxsplit): as split, but the splits counted from the right. */
static rlx_status str_rsplit(rlx_jinja_ctx *c, rlx_jv s, const rlx_jinja_args *a, rlx_jv *out) {
    static const char *const kw[] = {"sep", "maxsplit", NULL};
    RLX_TRY(rlx_jinja_check_args(c, "str.rsplit()", a, 2, kw));
    rlx_jv sep = rlx_jv_none(), maxv;
    int64_t max = -1;
    rlx_jinja_arg(a, 0, "sep", &sep);
    if (rlx_jinja_arg(a, 1, "maxsplit", &maxv)) RLX_TRY(need_int(c, "str.rsplit() maxsplit", maxv, &max));
    if (sep.kind == RLX_JV_NONE || max < 0) return str_split(c, s, a, out);
    RLX_TRY(need_str(c, "str.rsplit() separator", sep));
    if (sep.s.n == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "str.rsplit(): empty separator");
    RLX_TRY(rlx_jinja_charge(c, s.s.n));
    /* find the cut points from the right, then emit the pieces left to right */
    size_t cuts[64], n_cuts = 0, end = s.s.n;
    if (max > 64) return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED, "str.rsplit(): maxsplit above 64 is not supported");
    while ((int64_t)n_cuts < max && end >= sep.s.n) {
        size_t i = end - sep.s.n + 1;
        bool hit = false;
        while (!hit && i-- > 0) hit = match_at(s, i, sep);
        if (!hit) break;
        cuts[n_cuts++] = i;
        end = i;
    }
    rlx_jv_list *l;
    RLX_TRY(make_list(c, n_cuts + 1, &l));
    size_t start = 0;
    for (size_t k = n_cuts; k-- > 0;) {
        RLX_TRY(push(c, l, rlx_jv_str(s.s.p + start, cuts[k] - start)));
        start = cuts[k] + sep.s.n;
    }
    RLX_TRY(push(c, l, rlx_jv_str(s.s.p + start, s.s.n - start)));
    *out = list_value(l);
    return NULL;
}

/* startswith / endswith: a string or a tuple of strings. */
static rlx_status str_affix(rlx_jinja_ctx *c, rlx_jv s, const rlx_jinja_args *a, bool ends, rlx_jv *out) {
    const char *what = ends ? "str.endswith()" : "str.startswith()";
    RLX_TRY(rlx_jinja_check_args(c, what, a, 1, NULL));
    rlx_jv affix;
    if (!rlx_jinja_arg(a, 0, NULL, &affix))
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s needs an argument", what);
    const rlx_jv *options = &affix;
    size_t n = 1;
    if (affix.kind == RLX_JV_LIST) options = affix.list->items, n = affix.list->n;
    RLX_TRY(rlx_jinja_charge(c, n * sizeof(rlx_jv)));
    bool r = false;
    for (size_t i = 0; i < n && !r; i++) {
        RLX_TRY(need_str(c, what, options[i]));
        size_t k = options[i].s.n;
        r = k <= s.s.n && memcmp(ends ? s.s.p + s.s.n - k : s.s.p, options[i].s.p, k) == 0;
    }
    *out = rlx_jv_bool(r);
    return NULL;
}

static rlx_status str_find(rlx_jinja_ctx *c, rlx_jv s, const rlx_jinja_args *a, rlx_jv *out) {
    RLX_TRY(rlx_jinja_check_args(c, "str.find()", a, 1, NULL));
    rlx_jv sub;
    if (!rlx_jinja_arg(a, 0, NULL, &sub)) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "str.find() needs an argument");
    RLX_TRY(need_str(c, "str.find()", sub));
    RLX_TRY(rlx_jinja_charge(c, s.s.n));
    for (size_t i = 0; i + sub.s.n <= s.s.n; i++)
        if (match_at(s, i, sub)) {
            *out = rlx_jv_int((int64_t)rlx_jv_utf8_len(s.s.p, i));
            return NULL;
        }
    *out = rlx_jv_int(-1);
    return NULL;
}

static rlx_status str_join(rlx_jinja_ctx *c, rlx_jv sep, const rlx_jinja_args *a, rlx_jv *out) {
    RLX_TRY(rlx_jinja_check_args(c, "str.join()", a, 1, NULL));
    rlx_jv seq;
    if (!rlx_jinja_arg(a, 0, NULL, &seq)) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "str.join() needs an argument");
    const rlx_jv *items;
    size_t n;
    RLX_TRY(rlx_jinja_iterate(c, seq, &items, &n));
    rlx_jinja_buf b = {.limit = c->lim.max_memory};
    rlx_status s = NULL;
    for (size_t i = 0; i < n && !s; i++) {
        if ((s = need_str(c, "str.join() item", items[i]))) break;
        if ((i && !rlx_jinja_buf_append(&b, sep.s.p, sep.s.n)) || !rlx_jinja_buf_append(&b, items[i].s.p, items[i].s.n))
            s = rlx_jinja_oom(c);
    }
    char *r = s ? NULL : rlx_jinja_strndup(c->arena, b.p ? b.p : "", b.n);
    size_t len = b.n;
    rlx_jinja_buf_free(&b);
    if (s) return s;
    if (!r) return rlx_jinja_oom(c);
    *out = rlx_jv_str(r, len);
    return rlx_jinja_charge(c, len);
}

static rlx_status str_method(rlx_jinja_ctx *c, rlx_jv s, const char *name, const rlx_jinja_args *a, bool *found,
                             rlx_jv *out) {
    static const char *const strip_names[] = {"strip", "lstrip", "rstrip"};
    *found = true;
    for (int k = 0; k < 3; k++) {
        if (strcmp(name, strip_names[k])) continue;
        static const char *const kw[] = {"chars", NULL};
        RLX_TRY(rlx_jinja_check_args(c, name, a, 1, kw));
        rlx_jv chars;
        bool has = rlx_jinja_arg(a, 0, "chars", &chars) && chars.kind != RLX_JV_NONE;
        if (has) RLX_TRY(need_str(c, name, chars));
        return rlx_jinja_str_strip(c, s, has ? &chars : NULL, k != 2, k != 1, out);
    }
    static const struct {
        const char *name;
        rlx_jinja_case mode;
    } cases[] = {{"upper", RLX_JCASE_UPPER}, {"lower", RLX_JCASE_LOWER}, {"title", RLX_JCASE_TITLE},
                 {"capitalize", RLX_JCASE_CAPITALIZE}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        if (strcmp(name, cases[k].name)) continue;
        RLX_TRY(rlx_jinja_check_args(c, name, a, 0, NULL));
        return rlx_jinja_str_case(c, s, cases[k].mode, out);
    }
    if (!strcmp(name, "split")) return str_split(c, s, a, out);
    if (!strcmp(name, "rsplit")) return str_rsplit(c, s, a, out);
    if (!strcmp(name, "startswith")) return str_affix(c, s, a, false, out);
    if (!strcmp(name, "endswith")) return str_affix(c, s, a, true, out);
    if (!strcmp(name, "find")) return str_find(c, s, a, out);
    if (!strcmp(name, "join")) return str_join(c, s, a, out);
    if (!strcmp(name, "replace")) {
        RLX_TRY(rlx_jinja_check_args(c, "str.replace()", a, 3, NULL));
        rlx_jv old, repl, cnt;
        int64_t count = -1;
        if (!rlx_jinja_arg(a, 0, NULL, &old) || !rlx_jinja_arg(a, 1, NULL, &repl))
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "str.replace() needs two arguments");
        RLX_TRY(need_str(c, "str.replace()", old));
        RLX_TRY(need_str(c, "str.replace()", repl));
        if (rlx_jinja_arg(a, 2, NULL, &cnt)) RLX_TRY(need_int(c, "str.replace() count", cnt, &count));
        return rlx_jinja_str_replace(c, s, old, repl, count, out);
    }
    *found = false;
    return NULL;
}

static rlx_status dict_method(rlx_jinja_ctx *c, rlx_jv d, const char *name, const rlx_jinja_args *a, bool *found,
                              rlx_jv *out) {
    *found = true;
    if (!strcmp(name, "get")) {
        RLX_TRY(rlx_jinja_check_args(c, "dict.get()", a, 2, NULL));
        rlx_jv key, def = rlx_jv_none();
        if (!rlx_jinja_arg(a, 0, NULL, &key)) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "dict.get() needs a key");
        rlx_jinja_arg(a, 1, NULL, &def);
        const rlx_jv *v = rlx_jv_dict_get(d.dict, key);
        *out = v ? *v : def;
        return NULL;
    }
    bool keys = !strcmp(name, "keys"), values = !strcmp(name, "values"), items = !strcmp(name, "items");
    if (!keys && !values && !items) {
        *found = false;
        return NULL;
    }
    RLX_TRY(rlx_jinja_check_args(c, name, a, 0, NULL));
    rlx_jv_list *l;
    RLX_TRY(make_list(c, d.dict->n, &l));
    for (size_t i = 0; i < d.dict->n; i++) {
        if (!items) {
            l->items[l->n++] = keys ? d.dict->keys[i] : d.dict->vals[i];
            continue;
        }
        rlx_jv_list *pair;
        RLX_TRY(make_list(c, 2, &pair));
        pair->items[0] = d.dict->keys[i];
        pair->items[1] = d.dict->vals[i];
        pair->n = 2;
        pair->tuple = true;
        l->items[l->n++] = list_value(pair);
    }
    *out = list_value(l);
    return NULL;
}

rlx_status rlx_jinja_method_call(rlx_jinja_ctx *c, rlx_jv self, const char *name, const rlx_jinja_args *args,
                                 bool *found, rlx_jv *out) {
    *found = false;
    if (self.kind == RLX_JV_STR) return str_method(c, self, name, args, found, out);
    if (self.kind == RLX_JV_DICT) return dict_method(c, self, name, args, found, out);
    return NULL;
}

/* ---- global functions ---- */

const char *rlx_jinja_func_name(rlx_jinja_func f) {
    static const char *const names[RLX_JF_COUNT] = {
        [RLX_JF_RANGE] = "range",
        [RLX_JF_NAMESPACE] = "namespace",
        [RLX_JF_DICT] = "dict",
        [RLX_JF_RAISE_EXCEPTION] = "raise_exception",
        [RLX_JF_STRFTIME_NOW] = "strftime_now",
    };
    return (unsigned)f < RLX_JF_COUNT ? names[f] : "?";
}

static rlx_status fn_range(rlx_jinja_ctx *c, const rlx_jinja_args *a, rlx_jv *out) {
    RLX_TRY(rlx_jinja_check_args(c, "range()", a, 3, NULL));
    int64_t v[3] = {0, 0, 1};
    if (a->n_pos == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "range() needs at least one argument");
    for (size_t i = 0; i < a->n_pos; i++) RLX_TRY(need_int(c, "range()", a->pos[i], &v[i]));
    int64_t start = a->n_pos == 1 ? 0 : v[0], stop = a->n_pos == 1 ? v[0] : v[1], st = a->n_pos == 3 ? v[2] : 1;
    if (st == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "range() step must not be zero");
    /* the count in unsigned arithmetic: stop - start can pass INT64_MAX */
    uint64_t span = st > 0 ? (stop > start ? (uint64_t)stop - (uint64_t)start : 0)
                           : (start > stop ? (uint64_t)start - (uint64_t)stop : 0);
    uint64_t mag = st > 0 ? (uint64_t)st : (uint64_t)0 - (uint64_t)st;
    uint64_t count = span ? (span - 1) / mag + 1 : 0;
    if (count > c->lim.max_steps || count > SIZE_MAX / 64) /* the charge below is count * 64 bytes */
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "range() of %llu numbers is more than the step limit allows",
                              (unsigned long long)count);
    RLX_TRY(rlx_jinja_charge(c, count * 64));
    rlx_jv_list *l;
    RLX_TRY(make_list(c, (size_t)count, &l));
    for (uint64_t k = 0; k < count; k++) l->items[l->n++] = rlx_jv_int((int64_t)((uint64_t)start + k * (uint64_t)st));
    *out = list_value(l);
    return NULL;
}

/* namespace(...) and dict(...): keyword arguments (and an optional mapping to start from). */
static rlx_status fn_mapping(rlx_jinja_ctx *c, const rlx_jinja_args *a, rlx_jv_kind kind, rlx_jv *out) {
    const char *what = kind == RLX_JV_NAMESPACE ? "namespace()" : "dict()";
    if (a->n_pos > 1) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s takes at most one positional argument", what);
    rlx_jv_dict *d = rlx_jv_dict_new(c->arena, a->n_kw);
    if (!d) return rlx_jinja_oom(c);
    if (a->n_pos == 1) {
        rlx_jv init = a->pos[0];
        if (init.kind != RLX_JV_DICT && init.kind != RLX_JV_NAMESPACE)
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "%s expects a mapping, not '%s'", what,
                                  rlx_jv_type_name(init));
        for (size_t i = 0; i < init.dict->n; i++) {
            RLX_TRY(rlx_jinja_charge(c, d->n * 64)); /* each insertion looks at every key before it */
            if (!rlx_jv_dict_set(c->arena, d, init.dict->keys[i], init.dict->vals[i])) return rlx_jinja_oom(c);
        }
    }
    for (size_t j = 0; j < a->n_kw; j++) {
        RLX_TRY(rlx_jinja_charge(c, d->n * 64));
        if (!rlx_jv_dict_set(c->arena, d, rlx_jv_cstr(a->kw_names[j]), a->kw[j])) return rlx_jinja_oom(c);
    }
    *out = (rlx_jv){.kind = kind, .dict = d};
    return NULL;
}

static rlx_status fn_raise(rlx_jinja_ctx *c, const rlx_jinja_args *a) {
    rlx_jv msg = rlx_jv_str("", 0);
    rlx_jinja_arg(a, 0, NULL, &msg);
    rlx_status s = rlx_jv_to_str(c->arena, msg, &msg);
    if (s) return rlx_status_annotate(s, "%s:%u:%u", c->origin, c->line, c->col);
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "the template raised an exception: %.*s",
                          (int)(msg.s.n > 400 ? 400 : msg.s.n), msg.s.p);
}

/* strftime with English names, independent of the C locale. Only the directives below. */
static rlx_status format_time(rlx_jinja_ctx *c, rlx_jv fmt, const struct tm *tm, rlx_jinja_buf *b) {
    static const char *const months[] = {"January", "February", "March", "April", "May", "June",
                                         "July", "August", "September", "October", "November", "December"};
    static const char *const days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
    for (size_t i = 0; i < fmt.s.n; i++) {
        char piece[32];
        if (fmt.s.p[i] != '%' || i + 1 == fmt.s.n) {
            if (!rlx_jinja_buf_putc(b, fmt.s.p[i])) return rlx_jinja_oom(c);
            continue;
        }
        char d = fmt.s.p[++i];
        switch (d) {
        case 'd': snprintf(piece, sizeof piece, "%02d", tm->tm_mday); break;
        case 'e': snprintf(piece, sizeof piece, "%2d", tm->tm_mday); break;
        case 'm': snprintf(piece, sizeof piece, "%02d", tm->tm_mon + 1); break;
        case 'Y': snprintf(piece, sizeof piece, "%d", tm->tm_year + 1900); break;
        case 'y': snprintf(piece, sizeof piece, "%02d", (tm->tm_year + 1900) % 100); break;
        case 'H': snprintf(piece, sizeof piece, "%02d", tm->tm_hour); break;
        case 'I': snprintf(piece, sizeof piece, "%02d", tm->tm_hour % 12 ? tm->tm_hour % 12 : 12); break;
        case 'M': snprintf(piece, sizeof piece, "%02d", tm->tm_min); break;
        case 'S': snprintf(piece, sizeof piece, "%02d", tm->tm_sec); break;
        case 'p': snprintf(piece, sizeof piece, "%s", tm->tm_hour < 12 ? "AM" : "PM"); break;
        case 'j': snprintf(piece, sizeof piece, "%03d", tm->tm_yday + 1); break;
        case 'b': snprintf(piece, sizeof piece, "%.3s", months[tm->tm_mon]); break;
        case 'B': snprintf(piece, sizeof piece, "%s", months[tm->tm_mon]); break;
        case 'a': snprintf(piece, sizeof piece, "%.3s", days[tm->tm_wday]); break;
        case 'A': snprintf(piece, sizeof piece, "%s", days[tm->tm_wday]); break;
        case '%': snprintf(piece, sizeof piece, "%%"); break;
        default:
            return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED,
                                  "strftime_now: unsupported directive '%%%c' (supported: %%d %%e %%m %%Y %%y %%H %%I "
                                  "%%M %%S %%p %%j %%b %%B %%a %%A %%%%)",
                                  d);
        }
        if (!rlx_jinja_buf_append(b, piece, strlen(piece))) return rlx_jinja_oom(c);
    }
    return NULL;
}

static rlx_status fn_strftime(rlx_jinja_ctx *c, const rlx_jinja_args *a, rlx_jv *out) {
    RLX_TRY(rlx_jinja_check_args(c, "strftime_now()", a, 1, NULL));
    rlx_jv fmt;
    if (!rlx_jinja_arg(a, 0, NULL, &fmt)) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "strftime_now() needs a format");
    RLX_TRY(need_str(c, "strftime_now()", fmt));
    struct tm tm;
    time_t t = c->has_now ? (time_t)c->now : time(NULL);
    /* a fixed time is read as UTC so renders are reproducible; the current time is local, as in
     * transformers (datetime.now()) */
    if (!(c->has_now ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)))
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "strftime_now(): the time cannot be represented");
    rlx_jinja_buf b = {.limit = c->lim.max_memory};
    rlx_status s = format_time(c, fmt, &tm, &b);
    char *r = s ? NULL : rlx_jinja_strndup(c->arena, b.p ? b.p : "", b.n);
    size_t n = b.n;
    rlx_jinja_buf_free(&b);
    if (s) return s;
    if (!r) return rlx_jinja_oom(c);
    *out = rlx_jv_str(r, n);
    return NULL;
}

rlx_status rlx_jinja_func_call(rlx_jinja_ctx *c, rlx_jinja_func f, const rlx_jinja_args *args, rlx_jv *out) {
    switch (f) {
    case RLX_JF_RANGE: return fn_range(c, args, out);
    case RLX_JF_NAMESPACE: return fn_mapping(c, args, RLX_JV_NAMESPACE, out);
    case RLX_JF_DICT: return fn_mapping(c, args, RLX_JV_DICT, out);
    case RLX_JF_RAISE_EXCEPTION: return fn_raise(c, args);
    case RLX_JF_STRFTIME_NOW: return fn_strftime(c, args, out);
    default: return rlx_jinja_fail(c, RLX_ERR_INTERNAL, "internal: unknown function %d", (int)f);
    }
}
