/* Template values, their arena and their Python semantics. See text/template/jinja_value.h. */
#include "text/template/jinja_value.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- arena ---- */

#define ARENA_BLOCK 65536
#define ARENA_ALIGN 16

struct rlx_jinja_block {
    rlx_jinja_block *next;
    size_t size, used; /* bytes of data[] */
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void rlx_jinja_arena_init(rlx_jinja_arena *a, size_t limit) { *a = (rlx_jinja_arena){.limit = limit}; }

static rlx_jinja_block *arena_grow(rlx_jinja_arena *a, size_t need) {
    size_t size = need > ARENA_BLOCK ? need : ARENA_BLOCK;
    size_t total = sizeof(rlx_jinja_block) + size;
    if (a->limit && (a->used > a->limit || total > a->limit - a->used)) return NULL;
    rlx_jinja_block *b = malloc(total);
    if (!b) return NULL;
    b->size = size;
    b->used = 0;
    a->used += total;
    /* A big block goes behind the head so the head's free space stays in use. */
    if (need > ARENA_BLOCK && a->head) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    return b;
}

void *rlx_jinja_alloc(rlx_jinja_arena *a, size_t n) {
    if (n > SIZE_MAX - ARENA_ALIGN) return NULL;
    n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (n == 0) n = ARENA_ALIGN;
    rlx_jinja_block *b = a->head;
    if (!b || b->size - b->used < n) {
        b = arena_grow(a, n);
        if (!b) return NULL;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *rlx_jinja_strndup(rlx_jinja_arena *a, const char *p, size_t n) {
    if (n == SIZE_MAX) return NULL;
    char *s = rlx_jinja_alloc(a, n + 1);
    if (s && n) memcpy(s, p, n);
    return s;
}

void rlx_jinja_arena_free(rlx_jinja_arena *a) {
    rlx_jinja_block *b = a->head;
    while (b) {
        rlx_jinja_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used = 0;
}

/* ---- buffer ---- */

bool rlx_jinja_buf_append(rlx_jinja_buf *b, const char *p, size_t n) {
    if (n > SIZE_MAX - b->n - 1) return false;
    size_t need = b->n + n;
    if (b->limit && need > b->limit) return false;
    if (need + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need + 1) cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
        char *q = realloc(b->p, cap);
        if (!q) return false;
        b->p = q;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, p, n);
    b->n = need;
    b->p[b->n] = 0;
    return true;
}

bool rlx_jinja_buf_putc(rlx_jinja_buf *b, char c) { return rlx_jinja_buf_append(b, &c, 1); }

void rlx_jinja_buf_free(rlx_jinja_buf *b) {
    free(b->p);
    *b = (rlx_jinja_buf){.limit = b->limit};
}

static bool buf_puts(rlx_jinja_buf *b, const char *s) { return rlx_jinja_buf_append(b, s, strlen(s)); }

/* ---- containers ---- */

rlx_jv rlx_jv_cstr(const char *s) { return rlx_jv_str(s, strlen(s)); }

rlx_jv_list *rlx_jv_list_new(rlx_jinja_arena *a, size_t cap) {
    rlx_jv_list *l = rlx_jinja_alloc(a, sizeof *l);
    if (!l) return NULL;
    if (cap) {
        if (cap > SIZE_MAX / sizeof(rlx_jv)) return NULL;
        l->items = rlx_jinja_alloc(a, cap * sizeof(rlx_jv));
        if (!l->items) return NULL;
        l->cap = cap;
    }
    return l;
}

static bool grow(rlx_jinja_arena *a, void **arr, size_t *cap, size_t elem) {
    size_t ncap = *cap ? *cap * 2 : 4;
    size_t bytes;
    if (__builtin_mul_overflow(ncap, elem, &bytes)) return false;
    void *p = rlx_jinja_alloc(a, bytes);
    if (!p) return false;
    if (*cap) memcpy(p, *arr, *cap * elem);
    *arr = p;
    *cap = ncap;
    return true;
}

bool rlx_jv_list_push(rlx_jinja_arena *a, rlx_jv_list *l, rlx_jv v) {
    if (l->n == l->cap && !grow(a, (void **)&l->items, &l->cap, sizeof(rlx_jv))) return false;
    l->items[l->n++] = v;
    return true;
}

rlx_jv_dict *rlx_jv_dict_new(rlx_jinja_arena *a, size_t cap) {
    rlx_jv_dict *d = rlx_jinja_alloc(a, sizeof *d);
    if (!d) return NULL;
    if (cap) {
        if (cap > SIZE_MAX / sizeof(rlx_jv)) return NULL;
        d->keys = rlx_jinja_alloc(a, cap * sizeof(rlx_jv));
        d->vals = rlx_jinja_alloc(a, cap * sizeof(rlx_jv));
        if (!d->keys || !d->vals) return NULL;
        d->cap = cap;
    }
    return d;
}

rlx_jv *rlx_jv_dict_get(const rlx_jv_dict *d, rlx_jv key) {
    for (size_t i = 0; i < d->n; i++)
        if (rlx_jv_equal(d->keys[i], key)) return &d->vals[i];
    return NULL;
}

rlx_jv *rlx_jv_dict_get_str(const rlx_jv_dict *d, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < d->n; i++) {
        const rlx_jv *k = &d->keys[i];
        if (k->kind == RLX_JV_STR && k->s.n == n && memcmp(k->s.p, key, n) == 0) return &d->vals[i];
    }
    return NULL;
}

bool rlx_jv_dict_set(rlx_jinja_arena *a, rlx_jv_dict *d, rlx_jv key, rlx_jv val) {
    rlx_jv *slot = rlx_jv_dict_get(d, key);
    assert(key.kind != RLX_JV_LIST && key.kind != RLX_JV_DICT && key.kind != RLX_JV_NAMESPACE);
    if (slot) {
        *slot = val;
        return true;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap;
        void *keys = d->keys, *vals = d->vals;
        if (!grow(a, &keys, &cap, sizeof(rlx_jv))) return false;
        cap = d->cap;
        if (!grow(a, &vals, &cap, sizeof(rlx_jv))) return false;
        d->keys = keys;
        d->vals = vals;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n] = val;
    d->n++;
    return true;
}

/* ---- Python semantics ---- */

const char *rlx_jv_type_name(rlx_jv v) {
    switch (v.kind) {
    case RLX_JV_UNDEFINED: return "undefined";
    case RLX_JV_NONE: return "NoneType";
    case RLX_JV_BOOL: return "bool";
    case RLX_JV_INT: return "int";
    case RLX_JV_FLOAT: return "float";
    case RLX_JV_STR: return "str";
    case RLX_JV_LIST: return v.list->tuple ? "tuple" : "list";
    case RLX_JV_DICT: return "dict";
    case RLX_JV_NAMESPACE: return "namespace";
    case RLX_JV_MACRO: return "macro";
    case RLX_JV_FUNC: return "function";
    case RLX_JV_LOOP: return "loop";
    }
    return "?";
}

bool rlx_jv_truthy(rlx_jv v) {
    switch (v.kind) {
    case RLX_JV_UNDEFINED:
    case RLX_JV_NONE: return false;
    case RLX_JV_BOOL: return v.b;
    case RLX_JV_INT: return v.i != 0;
    case RLX_JV_FLOAT: return v.f != 0.0;
    case RLX_JV_STR: return v.s.n != 0;
    case RLX_JV_LIST: return v.list->n != 0;
    case RLX_JV_DICT: return v.dict->n != 0;
    default: return true;
    }
}

bool rlx_jv_is_number(rlx_jv v) {
    return v.kind == RLX_JV_INT || v.kind == RLX_JV_FLOAT || v.kind == RLX_JV_BOOL;
}

double rlx_jv_as_double(rlx_jv v) {
    switch (v.kind) {
    case RLX_JV_BOOL: return v.b;
    case RLX_JV_INT: return (double)v.i;
    case RLX_JV_FLOAT: return v.f;
    default: return 0.0;
    }
}

static bool is_intlike(rlx_jv v) { return v.kind == RLX_JV_INT || v.kind == RLX_JV_BOOL; }
static int64_t as_int(rlx_jv v) { return v.kind == RLX_JV_BOOL ? v.b : v.i; }

static rlx_status too_deep(const char *doing) {
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "%s: the value nests deeper than %d levels", doing, RLX_JINJA_MAX_DEPTH);
}

/* A bounded == walk: elements visited count down *budget (shared sublists can make a small value
 * enormous to walk: [[x] * 1000] * 1000); containers more than RLX_JINJA_MAX_DEPTH deep stop it. */
typedef struct eq_walk {
    uint64_t *budget;
    bool too_deep;
} eq_walk;

/* Python ==; false once the walk stops (budget spent or too deep). depth: containers entered. */
static bool equal_rec(rlx_jv a, rlx_jv b, eq_walk *w, uint32_t depth) {
    if (*w->budget == 0 || w->too_deep) return false;
    (*w->budget)--;
    if (rlx_jv_is_number(a) && rlx_jv_is_number(b)) {
        if (is_intlike(a) && is_intlike(b)) return as_int(a) == as_int(b);
        return rlx_jv_as_double(a) == rlx_jv_as_double(b);
    }
    if (a.kind != b.kind) return false;
    if ((a.kind == RLX_JV_LIST || a.kind == RLX_JV_DICT) && depth >= RLX_JINJA_MAX_DEPTH) {
        w->too_deep = true;
        return false;
    }
    switch (a.kind) {
    case RLX_JV_UNDEFINED:
    case RLX_JV_NONE: return true;
    case RLX_JV_STR: return a.s.n == b.s.n && (a.s.n == 0 || memcmp(a.s.p, b.s.p, a.s.n) == 0);
    case RLX_JV_LIST:
        if (a.list->tuple != b.list->tuple || a.list->n != b.list->n) return false;
        for (size_t i = 0; i < a.list->n; i++)
            if (!equal_rec(a.list->items[i], b.list->items[i], w, depth + 1)) return false;
        return true;
    case RLX_JV_DICT:
        if (a.dict->n != b.dict->n) return false;
        for (size_t i = 0; i < a.dict->n; i++) {
            /* the key lookup walks b's keys (scalars: see rlx_jv_dict_set) */
            *w->budget = *w->budget > b.dict->n ? *w->budget - b.dict->n : 0;
            const rlx_jv *v = rlx_jv_dict_get(b.dict, a.dict->keys[i]);
            if (!v || !equal_rec(a.dict->vals[i], *v, w, depth + 1)) return false;
        }
        return true;
    /* namespaces compare by identity, so a namespace holding itself never loops here */
    case RLX_JV_NAMESPACE: return a.dict == b.dict;
    case RLX_JV_MACRO: return a.macro == b.macro;
    case RLX_JV_FUNC: return a.func == b.func;
    case RLX_JV_LOOP: return a.loop == b.loop;
    default: return false;
    }
}

rlx_status rlx_jv_equal_within(rlx_jv a, rlx_jv b, bool *out, uint64_t *budget) {
    eq_walk w = {.budget = budget};
    *out = equal_rec(a, b, &w, 0);
    return w.too_deep ? too_deep("comparing values") : NULL;
}

bool rlx_jv_equal(rlx_jv a, rlx_jv b) {
    uint64_t unbounded = UINT64_MAX;
    eq_walk w = {.budget = &unbounded};
    return equal_rec(a, b, &w, 0);
}

static int sign_of(double d) { return (d > 0) - (d < 0); }

static rlx_status budget_spent(void) {
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "comparing the values took more than the step limit");
}

/* Python ordering; depth: the lists entered so far. */
static rlx_status compare_rec(rlx_jv a, rlx_jv b, int *cmp, uint64_t *budget, uint32_t depth) {
    if (*budget == 0) return budget_spent();
    (*budget)--;
    if (rlx_jv_is_number(a) && rlx_jv_is_number(b)) {
        if (is_intlike(a) && is_intlike(b))
            *cmp = (as_int(a) > as_int(b)) - (as_int(a) < as_int(b));
        else
            *cmp = sign_of(rlx_jv_as_double(a) - rlx_jv_as_double(b));
        return NULL;
    }
    if (a.kind == RLX_JV_STR && b.kind == RLX_JV_STR) {
        size_t n = a.s.n < b.s.n ? a.s.n : b.s.n;
        int c = n ? memcmp(a.s.p, b.s.p, n) : 0;
        *cmp = c ? (c > 0) - (c < 0) : (a.s.n > b.s.n) - (a.s.n < b.s.n);
        return NULL;
    }
    if (a.kind == RLX_JV_LIST && b.kind == RLX_JV_LIST) {
        if (depth >= RLX_JINJA_MAX_DEPTH) return too_deep("ordering values");
        eq_walk w = {.budget = budget};
        for (size_t i = 0; i < a.list->n && i < b.list->n; i++) {
            bool same = equal_rec(a.list->items[i], b.list->items[i], &w, depth + 1);
            if (*budget == 0) return budget_spent();
            if (w.too_deep) return too_deep("ordering values");
            if (!same) return compare_rec(a.list->items[i], b.list->items[i], cmp, budget, depth + 1);
        }
        *cmp = (a.list->n > b.list->n) - (a.list->n < b.list->n);
        return NULL;
    }
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "cannot order a value of type '%s' against one of type '%s'",
                      rlx_jv_type_name(a), rlx_jv_type_name(b));
}

rlx_status rlx_jv_compare(rlx_jv a, rlx_jv b, int *cmp, uint64_t *budget) { return compare_rec(a, b, cmp, budget, 0); }

/* ---- str() / repr() ---- */

/* Python's float repr: the shortest digits that read back exactly, in fixed notation for
 * exponents in [-4, 16) and scientific otherwise; integral values keep a ".0". */
static bool write_float(rlx_jinja_buf *b, double f) {
    if (isnan(f)) return buf_puts(b, "nan");
    if (isinf(f)) return buf_puts(b, f < 0 ? "-inf" : "inf");
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, f);
        if (strtod(sci, NULL) == f) break;
    }
    /* sci is [-]d[.ddd]e[+-]XX */
    const char *p = sci;
    bool neg = *p == '-';
    if (neg) p++;
    char digits[20];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.' && nd < sizeof digits) digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    char out[64];
    size_t o = 0;
    if (neg) out[o++] = '-';
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out[o++] = '0';
            out[o++] = '.';
            for (int i = -1; i > exp; i--) out[o++] = '0';
            for (size_t i = 0; i < nd; i++) out[o++] = digits[i];
        } else {
            for (int i = 0; i <= exp; i++) out[o++] = (size_t)i < nd ? digits[i] : '0';
            out[o++] = '.';
            if ((size_t)exp + 1 < nd)
                for (size_t i = (size_t)exp + 1; i < nd; i++) out[o++] = digits[i];
            else
                out[o++] = '0';
        }
        out[o] = 0;
    } else {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (size_t i = 1; i < nd; i++) out[o++] = digits[i];
        }
        snprintf(out + o, sizeof out - o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    return buf_puts(b, out);
}

static bool write_str_repr(rlx_jinja_buf *b, const char *p, size_t n) {
    bool has_single = memchr(p, '\'', n) != NULL, has_double = memchr(p, '"', n) != NULL;
    char q = has_single && !has_double ? '"' : '\'';
    if (!rlx_jinja_buf_putc(b, q)) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        char esc[8];
        const char *e = NULL;
        if (c == '\\') e = "\\\\";
        else if (c == (unsigned char)q) e = q == '\'' ? "\\'" : "\\\"";
        else if (c == '\n') e = "\\n";
        else if (c == '\r') e = "\\r";
        else if (c == '\t') e = "\\t";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\x%02x", c);
            e = esc;
        }
        if (e ? !buf_puts(b, e) : !rlx_jinja_buf_putc(b, (char)c)) return false;
    }
    return rlx_jinja_buf_putc(b, q);
}

/* str()/repr() of nested values: the containers being printed, outermost first. Past
 * RLX_JINJA_MAX_DEPTH the walk stops; when the container met there is already on the path, the
 * value contains itself and the error says so. */
typedef struct print_walk {
    rlx_jinja_buf *b;
    const void *path[RLX_JINJA_MAX_DEPTH];
    uint32_t depth;
    rlx_status err; /* set when the walk stopped for depth or a cycle (not for a full buffer) */
} print_walk;

static bool print_enter(print_walk *w, const void *container) {
    if (w->depth < RLX_JINJA_MAX_DEPTH) {
        w->path[w->depth++] = container;
        return true;
    }
    for (uint32_t i = 0; i < w->depth; i++)
        if (w->path[i] == container) {
            w->err = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "printing a value: it contains itself (a cycle, e.g. a "
                                                          "namespace assigned to its own attribute)");
            return false;
        }
    w->err = too_deep("printing a value");
    return false;
}

static bool write_value(print_walk *w, rlx_jv v, bool repr) {
    rlx_jinja_buf *b = w->b;
    char num[32];
    switch (v.kind) {
    case RLX_JV_UNDEFINED: return true;
    case RLX_JV_NONE: return buf_puts(b, "None");
    case RLX_JV_BOOL: return buf_puts(b, v.b ? "True" : "False");
    case RLX_JV_INT:
        snprintf(num, sizeof num, "%" PRId64, v.i);
        return buf_puts(b, num);
    case RLX_JV_FLOAT: return write_float(b, v.f);
    case RLX_JV_STR: return repr ? write_str_repr(b, v.s.p, v.s.n) : rlx_jinja_buf_append(b, v.s.p, v.s.n);
    case RLX_JV_LIST: {
        const rlx_jv_list *l = v.list;
        if (!print_enter(w, l) || !rlx_jinja_buf_putc(b, l->tuple ? '(' : '[')) return false;
        for (size_t i = 0; i < l->n; i++)
            if ((i && !buf_puts(b, ", ")) || !write_value(w, l->items[i], true)) return false;
        if (l->tuple && l->n == 1 && !rlx_jinja_buf_putc(b, ',')) return false;
        w->depth--;
        return rlx_jinja_buf_putc(b, l->tuple ? ')' : ']');
    }
    case RLX_JV_NAMESPACE:
    case RLX_JV_DICT: {
        const rlx_jv_dict *d = v.dict;
        if (!print_enter(w, d)) return false;
        if (v.kind == RLX_JV_NAMESPACE && !buf_puts(b, "<Namespace ")) return false;
        if (!rlx_jinja_buf_putc(b, '{')) return false;
        for (size_t i = 0; i < d->n; i++)
            if ((i && !buf_puts(b, ", ")) || !write_value(w, d->keys[i], true) || !buf_puts(b, ": ") ||
                !write_value(w, d->vals[i], true))
                return false;
        w->depth--;
        return rlx_jinja_buf_putc(b, '}') && (v.kind == RLX_JV_DICT || rlx_jinja_buf_putc(b, '>'));
    }
    case RLX_JV_MACRO: return buf_puts(b, "<macro>");
    case RLX_JV_FUNC: return buf_puts(b, "<function>");
    case RLX_JV_LOOP: return buf_puts(b, "<LoopContext>");
    }
    return true;
}

static rlx_status write_top(rlx_jinja_buf *b, rlx_jv v, bool repr) {
    print_walk w = {.b = b};
    if (write_value(&w, v, repr)) return NULL;
    if (w.err) return w.err;
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "printing a %s: the text passed the template memory limit",
                      rlx_jv_type_name(v));
}

rlx_status rlx_jv_write_str(rlx_jinja_buf *b, rlx_jv v) { return write_top(b, v, false); }
rlx_status rlx_jv_write_repr(rlx_jinja_buf *b, rlx_jv v) { return write_top(b, v, true); }

rlx_status rlx_jv_to_str(rlx_jinja_arena *a, rlx_jv v, rlx_jv *out) {
    if (v.kind == RLX_JV_STR) {
        *out = v;
        return NULL;
    }
    if (v.kind == RLX_JV_UNDEFINED) {
        *out = rlx_jv_str("", 0);
        return NULL;
    }
    rlx_jinja_buf b = {.limit = a->limit};
    char *s = NULL;
    rlx_status err = rlx_jv_write_str(&b, v);
    if (!err) s = rlx_jinja_strndup(a, b.p ? b.p : "", b.n);
    size_t n = b.n;
    rlx_jinja_buf_free(&b);
    if (err) return err;
    if (!s)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "converting a %s to a string: out of template memory",
                          rlx_jv_type_name(v));
    *out = rlx_jv_str(s, n);
    return NULL;
}

/* ---- JSON ---- */

static bool json_write_string(rlx_jinja_buf *b, const char *p, size_t n, bool ensure_ascii) {
    if (!rlx_jinja_buf_putc(b, '"')) return false;
    for (size_t i = 0; i < n;) {
        size_t len;
        uint32_t cp = rlx_jv_utf8_decode(p + i, n - i, &len);
        char esc[16];
        const char *e = NULL;
        switch (cp) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default:
            if (cp < 0x20 || (ensure_ascii && cp >= 0x7f)) {
                if (cp >= 0x10000) {
                    uint32_t v = cp - 0x10000;
                    snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                } else {
                    snprintf(esc, sizeof esc, "\\u%04x", cp);
                }
                e = esc;
            }
        }
        if (e ? !buf_puts(b, e) : !rlx_jinja_buf_append(b, p + i, len)) return false;
        i += len;
    }
    return rlx_jinja_buf_putc(b, '"');
}

static bool json_newline(rlx_jinja_buf *b, const rlx_jv_json_opts *o, int level) {
    if (o->indent < 0) return true;
    if (!rlx_jinja_buf_putc(b, '\n')) return false;
    for (int i = 0; i < o->indent * level; i++)
        if (!rlx_jinja_buf_putc(b, ' ')) return false;
    return true;
}

static rlx_status json_value(rlx_jinja_buf *b, rlx_jv v, const rlx_jv_json_opts *o, int level);

static rlx_status json_oom(void) {
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "tojson: the JSON text passed the template's size limit");
}

static int key_order(const void *x, const void *y) {
    const rlx_jv *a = *(const rlx_jv *const *)x, *b = *(const rlx_jv *const *)y;
    int c = 0;
    uint64_t budget = UINT64_MAX; /* keys are scalars */
    rlx_status s = rlx_jv_compare(*a, *b, &c, &budget);
    rlx_status_free(s);
    return c;
}

static rlx_status json_dict(rlx_jinja_buf *b, const rlx_jv_dict *d, const rlx_jv_json_opts *o, int level) {
    const char *item_sep = o->item_sep ? o->item_sep : o->indent >= 0 ? "," : ", ";
    const char *key_sep = o->key_sep ? o->key_sep : ": ";
    if (d->n == 0) return buf_puts(b, "{}") ? NULL : json_oom();
    /* sort_keys orders the keys through an index of pointers to them; vals[i] pairs with keys[i] */
    const rlx_jv **order = malloc(d->n * sizeof *order);
    if (!order) return json_oom();
    for (size_t i = 0; i < d->n; i++) order[i] = &d->keys[i];
    if (o->sort_keys) qsort(order, d->n, sizeof *order, key_order);
    rlx_status s = NULL;
    if (!rlx_jinja_buf_putc(b, '{')) s = json_oom();
    for (size_t i = 0; !s && i < d->n; i++) {
        const rlx_jv *k = order[i];
        rlx_jv val = d->vals[k - d->keys];
        if ((i && !buf_puts(b, item_sep)) || !json_newline(b, o, level + 1)) {
            s = json_oom();
            break;
        }
        if (k->kind == RLX_JV_STR) {
            if (!json_write_string(b, k->s.p, k->s.n, o->ensure_ascii)) s = json_oom();
        } else if (k->kind == RLX_JV_INT || k->kind == RLX_JV_FLOAT || k->kind == RLX_JV_BOOL || k->kind == RLX_JV_NONE) {
            /* json.dumps writes non-string keys as their JSON text in quotes */
            rlx_jinja_buf kb = {.limit = b->limit};
            s = json_value(&kb, *k, o, 0);
            if (!s && !json_write_string(b, kb.p, kb.n, false)) s = json_oom();
            rlx_jinja_buf_free(&kb);
        } else {
            s = rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "tojson: keys must be str, int, float, bool or None, not %s",
                           rlx_jv_type_name(*k));
        }
        if (!s && !buf_puts(b, key_sep)) s = json_oom();
        if (!s) s = json_value(b, val, o, level + 1);
    }
    free(order);
    if (!s && (!json_newline(b, o, level) || !rlx_jinja_buf_putc(b, '}'))) s = json_oom();
    return s;
}

static rlx_status json_value(rlx_jinja_buf *b, rlx_jv v, const rlx_jv_json_opts *o, int level) {
    char num[32];
    bool ok = true;
    if ((v.kind == RLX_JV_LIST || v.kind == RLX_JV_DICT) && level >= RLX_JINJA_MAX_DEPTH) return too_deep("tojson");
    switch (v.kind) {
    case RLX_JV_NONE: ok = buf_puts(b, "null"); break;
    case RLX_JV_BOOL: ok = buf_puts(b, v.b ? "true" : "false"); break;
    case RLX_JV_INT:
        snprintf(num, sizeof num, "%" PRId64, v.i);
        ok = buf_puts(b, num);
        break;
    case RLX_JV_FLOAT:
        if (isnan(v.f)) ok = buf_puts(b, "NaN");
        else if (isinf(v.f)) ok = buf_puts(b, v.f < 0 ? "-Infinity" : "Infinity");
        else ok = write_float(b, v.f);
        break;
    case RLX_JV_STR: ok = json_write_string(b, v.s.p, v.s.n, o->ensure_ascii); break;
    case RLX_JV_LIST: {
        const char *item_sep = o->item_sep ? o->item_sep : o->indent >= 0 ? "," : ", ";
        if (v.list->n == 0) return buf_puts(b, "[]") ? NULL : json_oom();
        if (!rlx_jinja_buf_putc(b, '[')) return json_oom();
        for (size_t i = 0; i < v.list->n; i++) {
            if ((i && !buf_puts(b, item_sep)) || !json_newline(b, o, level + 1)) return json_oom();
            RLX_TRY(json_value(b, v.list->items[i], o, level + 1));
        }
        ok = json_newline(b, o, level) && rlx_jinja_buf_putc(b, ']');
        break;
    }
    case RLX_JV_DICT: return json_dict(b, v.dict, o, level);
    default:
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "tojson: a value of type '%s' is not JSON serializable",
                          rlx_jv_type_name(v));
    }
    return ok ? NULL : json_oom();
}

rlx_status rlx_jv_write_json(rlx_jinja_buf *b, rlx_jv v, const rlx_jv_json_opts *o) {
    return json_value(b, v, o, 0);
}

static rlx_status from_json(rlx_jinja_arena *a, const json_t *j, rlx_jv *out, int depth) {
    if ((json_is_array(j) || json_is_object(j)) && depth >= RLX_JINJA_MAX_DEPTH) return too_deep("converting JSON");
    switch (json_typeof(j)) {
    case JSON_NULL: *out = rlx_jv_none(); return NULL;
    case JSON_TRUE: *out = rlx_jv_bool(true); return NULL;
    case JSON_FALSE: *out = rlx_jv_bool(false); return NULL;
    case JSON_INTEGER: *out = rlx_jv_int((int64_t)json_integer_value(j)); return NULL;
    case JSON_REAL: *out = rlx_jv_float(json_real_value(j)); return NULL;
    case JSON_STRING: {
        size_t n = json_string_length(j);
        char *s = rlx_jinja_strndup(a, json_string_value(j), n);
        if (!s) break;
        *out = rlx_jv_str(s, n);
        return NULL;
    }
    case JSON_ARRAY: {
        rlx_jv_list *l = rlx_jv_list_new(a, json_array_size(j));
        if (!l) break;
        for (size_t i = 0; i < json_array_size(j); i++)
            RLX_TRY(from_json(a, json_array_get(j, i), &l->items[l->n++], depth + 1));
        *out = (rlx_jv){.kind = RLX_JV_LIST, .list = l};
        return NULL;
    }
    case JSON_OBJECT: {
        rlx_jv_dict *d = rlx_jv_dict_new(a, json_object_size(j));
        if (!d) break;
        const char *key;
        json_t *val;
        json_object_foreach((json_t *)j, key, val) {
            char *k = rlx_jinja_strndup(a, key, strlen(key));
            if (!k) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "converting JSON: out of template memory");
            rlx_jv v;
            RLX_TRY(from_json(a, val, &v, depth + 1));
            /* JSON object keys are unique (jansson keeps the last of duplicates): no lookup needed */
            d->keys[d->n] = rlx_jv_cstr(k);
            d->vals[d->n++] = v;
        }
        *out = (rlx_jv){.kind = RLX_JV_DICT, .dict = d};
        return NULL;
    }
    }
    return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "converting JSON: out of template memory");
}

rlx_status rlx_jv_from_json(rlx_jinja_arena *a, const json_t *j, rlx_jv *out) { return from_json(a, j, out, 0); }

/* ---- UTF-8 ---- */

uint32_t rlx_jv_utf8_decode(const char *p, size_t n, size_t *len) {
    const unsigned char *s = (const unsigned char *)p;
    unsigned char c = s[0];
    size_t need;
    uint32_t cp, min;
    if (c < 0x80) {
        *len = 1;
        return c;
    } else if ((c & 0xE0) == 0xC0) {
        need = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        need = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        need = 4, cp = c & 0x07, min = 0x10000;
    } else {
        *len = 1;
        return c;
    }
    if (need > n) {
        *len = 1;
        return c;
    }
    for (size_t i = 1; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *len = 1;
            return c;
        }
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        *len = 1;
        return c;
    }
    *len = need;
    return cp;
}

static bool is_ascii(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] >= 0x80) return false;
    return true;
}

size_t rlx_jv_utf8_len(const char *p, size_t n) {
    if (is_ascii(p, n)) return n;
    size_t count = 0, len;
    for (size_t i = 0; i < n; i += len, count++) rlx_jv_utf8_decode(p + i, n - i, &len);
    return count;
}

size_t rlx_jv_utf8_offset(const char *p, size_t n, size_t i) {
    size_t off = 0, len;
    for (size_t k = 0; k < i && off < n; k++, off += len) rlx_jv_utf8_decode(p + off, n - off, &len);
    return off < n ? off : n;
}

bool rlx_jv_is_space(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
}
