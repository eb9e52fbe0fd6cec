/* Template evaluator: statements, expressions, scopes, macro calls and operators. Filters,
 * tests, methods and global functions are in text/template/jinja_filters.c and text/template/jinja_methods.c.
 * See text/template/jinja_eval.h for the scoping rules and the bounds. */
#include "text/template/jinja_eval.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text/template/jinja_builtins.h"

enum { JUMP_NONE, JUMP_BREAK, JUMP_CONTINUE };

struct rlx_jinja_frame {
    rlx_jinja_frame *parent; /* arena; NULL for the builtins scope */
    rlx_jv_dict vars;        /* keys borrow node names (template arena) */
};

struct rlx_jv_macro {
    const rlx_jinja_node *node; /* borrowed: the MACRO node */
    rlx_jinja_frame *scope;     /* arena: where it was defined */
};

struct rlx_jv_loop {
    const rlx_jv *items; /* borrowed: the (filtered) items iterated */
    size_t n, i;
};

/* ---- errors and budgets ---- */

rlx_status rlx_jinja_fail(rlx_jinja_ctx *c, rlx_code code, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlx_jinja_error(code, c->origin, c->line, c->col, "%s", msg);
}

rlx_status rlx_jinja_oom(rlx_jinja_ctx *c) {
    return rlx_jinja_fail(c, RLX_ERR_OUT_OF_MEMORY, "rendering used more than the template memory limit (%zu bytes)",
                          c->lim.max_memory);
}

static rlx_status step(rlx_jinja_ctx *c, uint64_t n) {
    if (c->steps > c->lim.max_steps || n > c->lim.max_steps - c->steps)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT,
                              "rendering took more than %llu steps (a runaway loop?)",
                              (unsigned long long)c->lim.max_steps);
    c->steps += n;
    return NULL;
}

rlx_status rlx_jinja_charge(rlx_jinja_ctx *c, size_t bytes) { return step(c, bytes / 64); }

static uint64_t steps_left(const rlx_jinja_ctx *c) {
    return c->steps < c->lim.max_steps ? c->lim.max_steps - c->steps : 0;
}

/* Settles a value walk that was given `left` steps and left `budget` unspent: a spent budget is
 * the step limit's error (whatever the walk said); else the walk's own error, placed at the current
 * node, or the steps it took. */
static rlx_status settle_walk(rlx_jinja_ctx *c, uint64_t left, uint64_t budget, rlx_status s) {
    if (budget == 0) {
        rlx_status_free(s);
        return step(c, left + 1);
    }
    if (s) return rlx_status_annotate(s, "%s:%u:%u", c->origin, c->line, c->col);
    return step(c, left - budget);
}

rlx_status rlx_jinja_equal(rlx_jinja_ctx *c, rlx_jv a, rlx_jv b, bool *out) {
    uint64_t left = steps_left(c), budget = left;
    rlx_status s = rlx_jv_equal_within(a, b, out, &budget);
    return settle_walk(c, left, budget, s);
}

rlx_status rlx_jinja_compare(rlx_jinja_ctx *c, rlx_jv a, rlx_jv b, int *cmp) {
    uint64_t left = steps_left(c), budget = left;
    rlx_status s = rlx_jv_compare(a, b, cmp, &budget);
    return settle_walk(c, left, budget, s);
}

/* Attaches the position of node n to an error that has none (those from value operations). */
static rlx_status located(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_status s) {
    if (!s) return s;
    return rlx_status_annotate(s, "%s:%u:%u", c->origin, n->line, n->col);
}

static void at(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    c->line = n->line;
    c->col = n->col;
}

rlx_status rlx_jinja_nest(rlx_jinja_ctx *c) {
    if (c->depth >= c->lim.max_depth)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "evaluation nests deeper than %u levels (runaway macro recursion?)",
                              c->lim.max_depth);
    c->depth++;
    return step(c, 1);
}

void rlx_jinja_unnest(rlx_jinja_ctx *c) { c->depth--; }

static rlx_status enter(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    at(c, n);
    return rlx_jinja_nest(c);
}

static rlx_status undefined_error(rlx_jinja_ctx *c, rlx_jv v, const char *doing) {
    if (v.undef) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "'%s' is undefined (%s)", v.undef, doing);
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "undefined value (%s)", doing);
}

/* ---- scopes ---- */

static rlx_jinja_frame *frame_new(rlx_jinja_ctx *c, rlx_jinja_frame *parent) {
    rlx_jinja_frame *f = rlx_jinja_alloc(c->arena, sizeof *f);
    if (f) f->parent = parent;
    return f;
}

static rlx_jv lookup(const rlx_jinja_ctx *c, const char *name) {
    for (const rlx_jinja_frame *f = c->frame; f; f = f->parent) {
        const rlx_jv *v = rlx_jv_dict_get_str(&f->vars, name);
        if (v) return *v;
    }
    return rlx_jv_undefined(name);
}

static rlx_status assign(rlx_jinja_ctx *c, rlx_jinja_frame *f, const char *name, rlx_jv v) {
    return rlx_jv_dict_set(c->arena, &f->vars, rlx_jv_cstr(name), v) ? NULL : rlx_jinja_oom(c);
}

/* ---- value access ---- */

static rlx_status loop_attr(rlx_jinja_ctx *c, const rlx_jv_loop *l, const char *name, rlx_jv *out) {
    int64_t i = (int64_t)l->i, n = (int64_t)l->n;
    if (!strcmp(name, "index")) *out = rlx_jv_int(i + 1);
    else if (!strcmp(name, "index0")) *out = rlx_jv_int(i);
    else if (!strcmp(name, "revindex")) *out = rlx_jv_int(n - i);
    else if (!strcmp(name, "revindex0")) *out = rlx_jv_int(n - i - 1);
    else if (!strcmp(name, "first")) *out = rlx_jv_bool(i == 0);
    else if (!strcmp(name, "last")) *out = rlx_jv_bool(i == n - 1);
    else if (!strcmp(name, "length")) *out = rlx_jv_int(n);
    else if (!strcmp(name, "depth")) *out = rlx_jv_int(1);
    else if (!strcmp(name, "depth0")) *out = rlx_jv_int(0);
    else if (!strcmp(name, "previtem")) *out = i > 0 ? l->items[i - 1] : rlx_jv_undefined("loop.previtem");
    else if (!strcmp(name, "nextitem")) *out = i + 1 < n ? l->items[i + 1] : rlx_jv_undefined("loop.nextitem");
    else return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED, "unsupported loop attribute 'loop.%s'", name);
    return NULL;
}

rlx_status rlx_jinja_getattr(rlx_jinja_ctx *c, rlx_jv obj, const char *name, rlx_jv *out) {
    switch (obj.kind) {
    case RLX_JV_UNDEFINED: {
        char doing[96];
        snprintf(doing, sizeof doing, "reading its attribute '%s'", name);
        return undefined_error(c, obj, doing);
    }
    case RLX_JV_DICT:
    case RLX_JV_NAMESPACE: {
        const rlx_jv *v = rlx_jv_dict_get_str(obj.dict, name);
        *out = v ? *v : rlx_jv_undefined(name);
        return NULL;
    }
    case RLX_JV_LOOP: return loop_attr(c, obj.loop, name, out);
    default: *out = rlx_jv_undefined(name); return NULL;
    }
}

/* Python's index normalisation: negative counts from the end; false when out of range. */
static bool norm_index(int64_t i, size_t n, size_t *out) {
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return false;
    *out = (size_t)i;
    return true;
}

static rlx_status char_at(rlx_jinja_ctx *c, rlx_jv s, size_t i, rlx_jv *out) {
    size_t off = rlx_jv_utf8_offset(s.s.p, s.s.n, i), len;
    rlx_jv_utf8_decode(s.s.p + off, s.s.n - off, &len);
    *out = rlx_jv_str(s.s.p + off, len);
    return rlx_jinja_charge(c, off);
}

static rlx_status getitem(rlx_jinja_ctx *c, rlx_jv obj, rlx_jv key, rlx_jv *out) {
    size_t i;
    bool int_key = key.kind == RLX_JV_INT || key.kind == RLX_JV_BOOL;
    int64_t k = key.kind == RLX_JV_BOOL ? key.b : key.i;
    switch (obj.kind) {
    case RLX_JV_UNDEFINED: return undefined_error(c, obj, "reading an item of it");
    case RLX_JV_LIST:
        *out = int_key && norm_index(k, obj.list->n, &i) ? obj.list->items[i] : rlx_jv_undefined(NULL);
        return NULL;
    case RLX_JV_STR:
        if (int_key && norm_index(k, rlx_jv_utf8_len(obj.s.p, obj.s.n), &i)) return char_at(c, obj, i, out);
        *out = rlx_jv_undefined(NULL);
        return NULL;
    case RLX_JV_DICT:
    case RLX_JV_NAMESPACE: {
        const rlx_jv *v = rlx_jv_dict_get(obj.dict, key);
        *out = v ? *v : rlx_jv_undefined(NULL);
        if (!v && key.kind == RLX_JV_STR) { /* keep the key's name for a later "'x' is undefined" */
            char *name = rlx_jinja_strndup(c->arena, key.s.p, key.s.n);
            if (!name) return rlx_jinja_oom(c);
            *out = rlx_jv_undefined(name);
        }
        return NULL;
    }
    case RLX_JV_LOOP:
        if (key.kind == RLX_JV_STR) {
            char name[32];
            snprintf(name, sizeof name, "%.*s", (int)(key.s.n > 31 ? 31 : key.s.n), key.s.p);
            return loop_attr(c, obj.loop, name, out);
        }
        /* fall through */
    default: *out = rlx_jv_undefined(NULL); return NULL;
    }
}

static rlx_status slice_bound(rlx_jinja_ctx *c, rlx_jv v, bool *given, int64_t *out) {
    *given = v.kind != RLX_JV_NONE && v.kind != RLX_JV_UNDEFINED;
    if (!*given) return NULL;
    if (v.kind != RLX_JV_INT && v.kind != RLX_JV_BOOL)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "slice indices must be integers or none, not %s",
                              rlx_jv_type_name(v));
    *out = v.kind == RLX_JV_BOOL ? v.b : v.i;
    return NULL;
}

/* Python's slice: the start index, step and count of the selected items of a length-n sequence. */
static rlx_status slice_indices(rlx_jinja_ctx *c, const rlx_jv b[3], size_t n, int64_t *start, int64_t *stepv,
                                size_t *count) {
    bool has_start, has_stop, has_step;
    int64_t lo = 0, hi = 0, st = 1, len = (int64_t)n;
    RLX_TRY(slice_bound(c, b[0], &has_start, &lo));
    RLX_TRY(slice_bound(c, b[1], &has_stop, &hi));
    RLX_TRY(slice_bound(c, b[2], &has_step, &st));
    if (!has_step) st = 1;
    if (st == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    int64_t lower = st > 0 ? 0 : -1, upper = st > 0 ? len : len - 1;
    if (!has_start) lo = st > 0 ? lower : upper;
    else if (lo < 0) lo = lo + len < lower ? lower : lo + len;
    else if (lo > upper) lo = upper;
    if (!has_stop) hi = st > 0 ? upper : lower;
    else if (hi < 0) hi = hi + len < lower ? lower : hi + len;
    else if (hi > upper) hi = upper;
    /* lo and hi are now in [-1, len]; the step's magnitude is unsigned, as -INT64_MIN is not an int64 */
    uint64_t mag = st > 0 ? (uint64_t)st : (uint64_t)0 - (uint64_t)st, cnt = 0;
    if (st > 0 && hi > lo) cnt = (uint64_t)(hi - lo - 1) / mag + 1;
    if (st < 0 && lo > hi) cnt = (uint64_t)(lo - hi - 1) / mag + 1;
    *start = lo;
    *stepv = st;
    *count = (size_t)cnt;
    return NULL;
}

static rlx_status slice_value(rlx_jinja_ctx *c, rlx_jv obj, const rlx_jv b[3], rlx_jv *out) {
    int64_t start, st;
    size_t count;
    if (obj.kind == RLX_JV_UNDEFINED) return undefined_error(c, obj, "slicing it");
    if (obj.kind == RLX_JV_LIST) {
        RLX_TRY(slice_indices(c, b, obj.list->n, &start, &st, &count));
        rlx_jv_list *l = rlx_jv_list_new(c->arena, count);
        if (!l) return rlx_jinja_oom(c);
        for (size_t k = 0; k < count; k++) l->items[l->n++] = obj.list->items[start + (int64_t)k * st];
        l->tuple = obj.list->tuple;
        *out = (rlx_jv){.kind = RLX_JV_LIST, .list = l};
        return rlx_jinja_charge(c, count * sizeof(rlx_jv));
    }
    if (obj.kind != RLX_JV_STR)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "cannot slice a value of type '%s'", rlx_jv_type_name(obj));
    RLX_TRY(rlx_jinja_charge(c, obj.s.n));
    /* code point boundaries, so slices never split a UTF-8 sequence */
    size_t n_cp = rlx_jv_utf8_len(obj.s.p, obj.s.n);
    size_t *offs = rlx_jinja_alloc(c->arena, (n_cp + 1) * sizeof *offs);
    char *s = rlx_jinja_alloc(c->arena, obj.s.n + 1);
    if (!offs || !s) return rlx_jinja_oom(c);
    for (size_t k = 0, off = 0, len; k <= n_cp; k++, off += len) {
        offs[k] = off;
        len = off < obj.s.n ? 0 : 1;
        if (off < obj.s.n) rlx_jv_utf8_decode(obj.s.p + off, obj.s.n - off, &len);
    }
    RLX_TRY(slice_indices(c, b, n_cp, &start, &st, &count));
    size_t o = 0;
    for (size_t k = 0; k < count; k++) {
        size_t cp = (size_t)(start + (int64_t)k * st);
        memcpy(s + o, obj.s.p + offs[cp], offs[cp + 1] - offs[cp]);
        o += offs[cp + 1] - offs[cp];
    }
    *out = rlx_jv_str(s, o);
    return NULL;
}

rlx_status rlx_jinja_iterate(rlx_jinja_ctx *c, rlx_jv v, const rlx_jv **items, size_t *n) {
    switch (v.kind) {
    case RLX_JV_UNDEFINED: *items = NULL, *n = 0; return NULL;
    /* callers walk what they get: account for it once here */
    case RLX_JV_LIST:
        *items = v.list->items, *n = v.list->n;
        return rlx_jinja_charge(c, v.list->n * sizeof(rlx_jv));
    case RLX_JV_DICT:
        *items = v.dict->keys, *n = v.dict->n;
        return rlx_jinja_charge(c, v.dict->n * sizeof(rlx_jv));
    case RLX_JV_STR: {
        RLX_TRY(rlx_jinja_charge(c, v.s.n));
        size_t count = rlx_jv_utf8_len(v.s.p, v.s.n), len;
        rlx_jv *chars = rlx_jinja_alloc(c->arena, (count ? count : 1) * sizeof *chars);
        if (!chars) return rlx_jinja_oom(c);
        for (size_t k = 0, off = 0; k < count; k++, off += len) {
            rlx_jv_utf8_decode(v.s.p + off, v.s.n - off, &len);
            chars[k] = rlx_jv_str(v.s.p + off, len);
        }
        *items = chars, *n = count;
        return NULL;
    }
    default:
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "a value of type '%s' is not iterable", rlx_jv_type_name(v));
    }
}

/* ---- expressions ---- */

static rlx_status eval(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out);
static rlx_status exec(rlx_jinja_ctx *c, const rlx_jinja_node *n);

/* Evaluates kids[first..] of a call/filter/test node into positional and keyword arguments. */
static rlx_status eval_args(rlx_jinja_ctx *c, const rlx_jinja_node *n, size_t first, rlx_jinja_args *a) {
    size_t total = n->n_kids > first ? n->n_kids - first : 0;
    *a = (rlx_jinja_args){0};
    if (!total) return NULL;
    rlx_jv *pos = rlx_jinja_alloc(c->arena, total * sizeof *pos);
    rlx_jv *kw = rlx_jinja_alloc(c->arena, total * sizeof *kw);
    const char **names = rlx_jinja_alloc(c->arena, total * sizeof *names);
    if (!pos || !kw || !names) return rlx_jinja_oom(c);
    for (size_t i = first; i < n->n_kids; i++) {
        const rlx_jinja_node *k = n->kids[i];
        if (k->kind == RLX_JN_KWARG) {
            /* the duplicate check looks at every keyword before this one */
            at(c, k);
            RLX_TRY(rlx_jinja_charge(c, a->n_kw * 64));
            for (size_t j = 0; j < a->n_kw; j++)
                if (!strcmp(names[j], k->name)) {
                    at(c, k);
                    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "keyword argument '%s' given twice", k->name);
                }
            names[a->n_kw] = k->name;
            RLX_TRY(eval(c, k->kids[0], &kw[a->n_kw++]));
        } else {
            RLX_TRY(eval(c, k, &pos[a->n_pos++]));
        }
    }
    a->pos = pos;
    a->kw = kw;
    a->kw_names = names;
    return NULL;
}

static rlx_status call_macro(rlx_jinja_ctx *c, const rlx_jv_macro *m, const rlx_jinja_args *a, rlx_jv *out) {
    const rlx_jinja_node *def = m->node;
    size_t n_params = def->n_kids - 1;
    if (a->n_pos > n_params)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "macro '%s' takes at most %zu arguments (%zu given)",
                              def->name, n_params, a->n_pos);
    for (size_t j = 0; j < a->n_kw; j++) {
        RLX_TRY(rlx_jinja_charge(c, n_params * 64)); /* each name is looked for among the parameters */
        bool known = false;
        for (size_t i = 0; i < n_params && !known; i++) known = !strcmp(def->kids[i]->name, a->kw_names[j]);
        if (!known)
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "macro '%s' has no parameter '%s'", def->name,
                                  a->kw_names[j]);
    }
    rlx_jinja_frame *f = frame_new(c, m->scope);
    if (!f) return rlx_jinja_oom(c);
    rlx_jinja_frame *saved_frame = c->frame;
    c->frame = f; /* defaults are evaluated in the macro's scope, after the parameters before them */
    rlx_status s = NULL;
    for (size_t i = 0; i < n_params && !s; i++) {
        const rlx_jinja_node *p = def->kids[i];
        rlx_jv v;
        /* finding the argument and binding it look at every keyword and parameter bound before */
        if ((s = rlx_jinja_charge(c, (a->n_kw + i) * 64))) break;
        if (!rlx_jinja_arg(a, i, p->name, &v)) {
            if (p->kids[0]) s = eval(c, p->kids[0], &v);
            else v = rlx_jv_undefined(p->name);
        }
        if (!s) s = assign(c, f, p->name, v);
    }
    rlx_jinja_buf *saved_out = c->out;
    /* the nested buffer may only use what its enclosing buffers left: live output stays bounded */
    rlx_jinja_buf buf = {.limit = saved_out->limit - saved_out->n};
    int saved_jump = c->jump;
    if (!s) {
        c->out = &buf;
        s = exec(c, def->kids[n_params]);
    }
    c->out = saved_out;
    c->frame = saved_frame;
    c->jump = saved_jump;
    char *text = s ? NULL : rlx_jinja_strndup(c->arena, buf.p ? buf.p : "", buf.n);
    size_t len = buf.n;
    rlx_jinja_buf_free(&buf);
    if (s) return s;
    if (!text) return rlx_jinja_oom(c);
    *out = rlx_jv_str(text, len);
    return NULL;
}

static rlx_status call_value(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv fn, const rlx_jinja_args *a,
                             rlx_jv *out) {
    at(c, n);
    switch (fn.kind) {
    case RLX_JV_MACRO: return call_macro(c, fn.macro, a, out);
    case RLX_JV_FUNC: return rlx_jinja_func_call(c, (rlx_jinja_func)fn.func, a, out);
    case RLX_JV_UNDEFINED: return undefined_error(c, fn, "called as a function");
    default:
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "a value of type '%s' is not callable",
                              rlx_jv_type_name(fn));
    }
}

static rlx_status eval_call(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    const rlx_jinja_node *callee = n->kids[0];
    rlx_jinja_args a;
    if (callee->kind == RLX_JN_ATTR) {
        /* obj.method(...): Python methods of str and dict, loop.cycle, or a callable attribute */
        rlx_jv obj;
        RLX_TRY(eval(c, callee->kids[0], &obj));
        RLX_TRY(eval_args(c, n, 1, &a));
        at(c, callee);
        if (obj.kind == RLX_JV_UNDEFINED) {
            char doing[96];
            snprintf(doing, sizeof doing, "calling its method '%s'", callee->name);
            return undefined_error(c, obj, doing);
        }
        if (obj.kind == RLX_JV_LOOP && !strcmp(callee->name, "cycle")) {
            if (a.n_pos == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "loop.cycle() needs arguments");
            *out = a.pos[obj.loop->i % a.n_pos];
            return NULL;
        }
        bool found = false;
        RLX_TRY(rlx_jinja_method_call(c, obj, callee->name, &a, &found, out));
        if (found) return NULL;
        rlx_jv fn;
        RLX_TRY(rlx_jinja_getattr(c, obj, callee->name, &fn));
        if (fn.kind == RLX_JV_UNDEFINED && obj.kind != RLX_JV_NAMESPACE && obj.kind != RLX_JV_DICT)
            return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED, "unsupported method '%s' on a value of type '%s'",
                                  callee->name, rlx_jv_type_name(obj));
        return call_value(c, n, fn, &a, out);
    }
    rlx_jv fn;
    RLX_TRY(eval(c, callee, &fn));
    RLX_TRY(eval_args(c, n, 1, &a));
    return call_value(c, n, fn, &a, out);
}

static rlx_status eval_list(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv_list *l = rlx_jv_list_new(c->arena, n->n_kids);
    if (!l) return rlx_jinja_oom(c);
    l->tuple = n->kind == RLX_JN_TUPLE;
    for (size_t i = 0; i < n->n_kids; i++) RLX_TRY(eval(c, n->kids[i], &l->items[l->n++]));
    *out = (rlx_jv){.kind = RLX_JV_LIST, .list = l};
    return NULL;
}

static rlx_status eval_dict(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv_dict *d = rlx_jv_dict_new(c->arena, n->n_kids / 2);
    if (!d) return rlx_jinja_oom(c);
    for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
        rlx_jv k, v;
        RLX_TRY(eval(c, n->kids[i], &k));
        RLX_TRY(eval(c, n->kids[i + 1], &v));
        if (!(k.kind == RLX_JV_STR || rlx_jv_is_number(k) || k.kind == RLX_JV_NONE)) {
            at(c, n->kids[i]);
            return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED, "unsupported dict key of type '%s' (keys are strings, numbers, "
                                  "booleans or none)", rlx_jv_type_name(k));
        }
        /* each insertion looks at every key before it */
        RLX_TRY(rlx_jinja_charge(c, d->n * 64));
        if (!rlx_jv_dict_set(c->arena, d, k, v)) return rlx_jinja_oom(c);
    }
    *out = (rlx_jv){.kind = RLX_JV_DICT, .dict = d};
    return NULL;
}

static rlx_status eval_item(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv obj;
    RLX_TRY(eval(c, n->kids[0], &obj));
    const rlx_jinja_node *idx = n->kids[1];
    if (idx->kind == RLX_JN_SLICE) {
        rlx_jv b[3] = {rlx_jv_none(), rlx_jv_none(), rlx_jv_none()};
        for (int i = 0; i < 3; i++)
            if (idx->kids[i]) RLX_TRY(eval(c, idx->kids[i], &b[i]));
        at(c, n);
        return slice_value(c, obj, b, out);
    }
    rlx_jv key;
    RLX_TRY(eval(c, idx, &key));
    at(c, n);
    return getitem(c, obj, key, out);
}

static rlx_status eval_filter(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv in;
    rlx_jinja_args a;
    RLX_TRY(eval(c, n->kids[0], &in));
    RLX_TRY(eval_args(c, n, 1, &a));
    at(c, n);
    return rlx_jinja_filter_apply(c, n->id, in, &a, out);
}

static rlx_status eval_test(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv in;
    rlx_jinja_args a;
    RLX_TRY(eval(c, n->kids[0], &in));
    RLX_TRY(eval_args(c, n, 1, &a));
    at(c, n);
    bool r;
    RLX_TRY(rlx_jinja_test_apply(c, n->id, in, &a, &r));
    *out = rlx_jv_bool(r != n->negated);
    return NULL;
}

static rlx_status type_error(rlx_jinja_ctx *c, rlx_jinja_op op, rlx_jv x, rlx_jv y) {
    if (x.kind == RLX_JV_UNDEFINED) return undefined_error(c, x, "used with an operator");
    if (y.kind == RLX_JV_UNDEFINED) return undefined_error(c, y, "used with an operator");
    return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "unsupported operand types for %s: '%s' and '%s'",
                          rlx_jinja_op_text(op), rlx_jv_type_name(x), rlx_jv_type_name(y));
}

static rlx_status concat_str(rlx_jinja_ctx *c, rlx_jv x, rlx_jv y, rlx_jv *out) {
    if (x.s.n > SIZE_MAX / 2 || y.s.n > SIZE_MAX / 2) return rlx_jinja_oom(c);
    char *s = rlx_jinja_alloc(c->arena, x.s.n + y.s.n + 1);
    if (!s) return rlx_jinja_oom(c);
    if (x.s.n) memcpy(s, x.s.p, x.s.n);
    if (y.s.n) memcpy(s + x.s.n, y.s.p, y.s.n);
    *out = rlx_jv_str(s, x.s.n + y.s.n);
    return rlx_jinja_charge(c, x.s.n + y.s.n);
}

/* seq * count for strings and lists; the result's size is checked before anything is copied. */
static rlx_status repeat(rlx_jinja_ctx *c, rlx_jv seq, int64_t count, rlx_jv *out) {
    if (count < 0) count = 0;
    size_t unit = seq.kind == RLX_JV_STR ? seq.s.n : seq.list->n * sizeof(rlx_jv), bytes;
    if (__builtin_mul_overflow(unit, (uint64_t)count, &bytes) || bytes > c->lim.max_memory) return rlx_jinja_oom(c);
    RLX_TRY(rlx_jinja_charge(c, bytes));
    if (bytes == 0) count = 0; /* '' * 10**12 must not loop 10**12 times */
    if (seq.kind == RLX_JV_STR) {
        char *s = rlx_jinja_alloc(c->arena, bytes + 1);
        if (!s) return rlx_jinja_oom(c);
        for (int64_t k = 0; k < count; k++) memcpy(s + (size_t)k * seq.s.n, seq.s.p, seq.s.n);
        *out = rlx_jv_str(s, bytes);
        return NULL;
    }
    size_t n = seq.list->n * (size_t)count;
    rlx_jv_list *l = rlx_jv_list_new(c->arena, n);
    if (!l) return rlx_jinja_oom(c);
    for (int64_t k = 0; k < count; k++)
        for (size_t i = 0; i < seq.list->n; i++) l->items[l->n++] = seq.list->items[i];
    l->tuple = seq.list->tuple;
    *out = (rlx_jv){.kind = RLX_JV_LIST, .list = l};
    return NULL;
}

static rlx_status int_arith(rlx_jinja_ctx *c, rlx_jinja_op op, int64_t x, int64_t y, rlx_jv *out) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
    case RLX_JOP_ADD: overflow = __builtin_add_overflow(x, y, &r); break;
    case RLX_JOP_SUB: overflow = __builtin_sub_overflow(x, y, &r); break;
    case RLX_JOP_MUL: overflow = __builtin_mul_overflow(x, y, &r); break;
    case RLX_JOP_DIV:
        if (y == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "division by zero");
        *out = rlx_jv_float((double)x / (double)y);
        return NULL;
    case RLX_JOP_FLOORDIV:
    case RLX_JOP_MOD:
        if (y == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "integer division or modulo by zero");
        if (x == INT64_MIN && y == -1) {
            overflow = op == RLX_JOP_FLOORDIV;
            break;
        }
        r = op == RLX_JOP_FLOORDIV ? x / y : x % y;
        /* Python floors: the remainder takes the divisor's sign */
        if (x % y != 0 && ((x < 0) != (y < 0))) r = op == RLX_JOP_FLOORDIV ? r - 1 : r + y;
        break;
    case RLX_JOP_POW:
        if (y < 0) {
            *out = rlx_jv_float(pow((double)x, (double)y));
            return NULL;
        }
        r = 1;
        for (int64_t base = x, e = y; e > 0 && !overflow; e >>= 1) {
            if (e & 1) overflow = __builtin_mul_overflow(r, base, &r);
            if (e > 1 && !overflow) overflow = __builtin_mul_overflow(base, base, &base);
        }
        break;
    default: return rlx_jinja_fail(c, RLX_ERR_INTERNAL, "bad arithmetic operator");
    }
    if (overflow)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "integer overflow in '%s' (64-bit integers)",
                              rlx_jinja_op_text(op));
    *out = rlx_jv_int(r);
    return NULL;
}

static rlx_status float_arith(rlx_jinja_ctx *c, rlx_jinja_op op, double x, double y, rlx_jv *out) {
    double r;
    switch (op) {
    case RLX_JOP_ADD: r = x + y; break;
    case RLX_JOP_SUB: r = x - y; break;
    case RLX_JOP_MUL: r = x * y; break;
    case RLX_JOP_POW: r = pow(x, y); break;
    default:
        if (y == 0) return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "float division by zero");
        if (op == RLX_JOP_DIV) r = x / y;
        else if (op == RLX_JOP_FLOORDIV) r = floor(x / y);
        else r = x - floor(x / y) * y;
    }
    *out = rlx_jv_float(r);
    return NULL;
}

static rlx_status binop(rlx_jinja_ctx *c, rlx_jinja_op op, rlx_jv x, rlx_jv y, rlx_jv *out) {
    if (rlx_jv_is_number(x) && rlx_jv_is_number(y)) {
        if (x.kind != RLX_JV_FLOAT && y.kind != RLX_JV_FLOAT)
            return int_arith(c, op, x.kind == RLX_JV_BOOL ? x.b : x.i, y.kind == RLX_JV_BOOL ? y.b : y.i, out);
        return float_arith(c, op, rlx_jv_as_double(x), rlx_jv_as_double(y), out);
    }
    if (op == RLX_JOP_ADD && x.kind == RLX_JV_STR && y.kind == RLX_JV_STR) return concat_str(c, x, y, out);
    if (op == RLX_JOP_ADD && x.kind == RLX_JV_LIST && y.kind == RLX_JV_LIST) {
        rlx_jv_list *l = rlx_jv_list_new(c->arena, x.list->n + y.list->n);
        if (!l) return rlx_jinja_oom(c);
        for (size_t i = 0; i < x.list->n; i++) l->items[l->n++] = x.list->items[i];
        for (size_t i = 0; i < y.list->n; i++) l->items[l->n++] = y.list->items[i];
        l->tuple = x.list->tuple;
        *out = (rlx_jv){.kind = RLX_JV_LIST, .list = l};
        return rlx_jinja_charge(c, l->n * sizeof(rlx_jv));
    }
    if (op == RLX_JOP_MUL) {
        bool seq_x = x.kind == RLX_JV_STR || x.kind == RLX_JV_LIST, seq_y = y.kind == RLX_JV_STR || y.kind == RLX_JV_LIST;
        if (seq_x && (y.kind == RLX_JV_INT || y.kind == RLX_JV_BOOL))
            return repeat(c, x, y.kind == RLX_JV_BOOL ? y.b : y.i, out);
        if (seq_y && (x.kind == RLX_JV_INT || x.kind == RLX_JV_BOOL))
            return repeat(c, y, x.kind == RLX_JV_BOOL ? x.b : x.i, out);
    }
    if (op == RLX_JOP_MOD && x.kind == RLX_JV_STR)
        return rlx_jinja_fail(c, RLX_ERR_UNSUPPORTED, "unsupported: printf-style string formatting with '%%'");
    return type_error(c, op, x, y);
}

static rlx_status eval_concat(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jinja_buf b = {.limit = c->lim.max_memory};
    rlx_status s = NULL;
    for (size_t i = 0; i < n->n_kids && !s; i++) {
        rlx_jv v;
        if (!(s = eval(c, n->kids[i], &v))) s = located(c, n, rlx_jv_write_str(&b, v));
    }
    char *text = s ? NULL : rlx_jinja_strndup(c->arena, b.p ? b.p : "", b.n);
    size_t len = b.n;
    rlx_jinja_buf_free(&b);
    if (s) return s;
    if (!text) return rlx_jinja_oom(c);
    *out = rlx_jv_str(text, len);
    return rlx_jinja_charge(c, len);
}

rlx_status rlx_jinja_contains(rlx_jinja_ctx *c, rlx_jv hay, rlx_jv needle, bool *out) {
    *out = false;
    switch (hay.kind) {
    case RLX_JV_UNDEFINED: return NULL;
    case RLX_JV_STR:
        if (needle.kind != RLX_JV_STR)
            return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "'in <string>' needs a string on the left, not '%s'",
                                  rlx_jv_type_name(needle));
        RLX_TRY(rlx_jinja_charge(c, hay.s.n));
        if (needle.s.n == 0) *out = true;
        for (size_t i = 0; !*out && needle.s.n <= hay.s.n && i <= hay.s.n - needle.s.n; i++)
            *out = memcmp(hay.s.p + i, needle.s.p, needle.s.n) == 0;
        return NULL;
    case RLX_JV_LIST:
        for (size_t i = 0; i < hay.list->n && !*out; i++) RLX_TRY(rlx_jinja_equal(c, hay.list->items[i], needle, out));
        return NULL;
    case RLX_JV_DICT:
    case RLX_JV_NAMESPACE: *out = rlx_jv_dict_get(hay.dict, needle) != NULL; return NULL;
    default:
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "argument of type '%s' is not iterable",
                              rlx_jv_type_name(hay));
    }
}

static rlx_status compare_one(rlx_jinja_ctx *c, rlx_jinja_op op, rlx_jv x, rlx_jv y, bool *out) {
    int cmp;
    switch (op) {
    case RLX_JOP_EQ: return rlx_jinja_equal(c, x, y, out);
    case RLX_JOP_NE:
        RLX_TRY(rlx_jinja_equal(c, x, y, out));
        *out = !*out;
        return NULL;
    case RLX_JOP_IN: return rlx_jinja_contains(c, y, x, out);
    case RLX_JOP_NOT_IN:
        RLX_TRY(rlx_jinja_contains(c, y, x, out));
        *out = !*out;
        return NULL;
    default:
        if (x.kind == RLX_JV_UNDEFINED || y.kind == RLX_JV_UNDEFINED) return type_error(c, op, x, y);
        RLX_TRY(rlx_jinja_compare(c, x, y, &cmp));
        *out = op == RLX_JOP_LT ? cmp < 0 : op == RLX_JOP_GT ? cmp > 0 : op == RLX_JOP_LE ? cmp <= 0 : cmp >= 0;
        return NULL;
    }
}

static rlx_status eval_compare(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv left;
    RLX_TRY(eval(c, n->kids[0], &left));
    bool r = true;
    for (size_t i = 1; i < n->n_kids && r; i++) {
        rlx_jv right;
        RLX_TRY(eval(c, n->kids[i], &right));
        at(c, n);
        RLX_TRY(compare_one(c, n->ops[i - 1], left, right, &r));
        left = right;
    }
    *out = rlx_jv_bool(r);
    return NULL;
}

static rlx_status eval_unary(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv v;
    RLX_TRY(eval(c, n->kids[0], &v));
    at(c, n);
    if (n->kind == RLX_JN_NOT) {
        *out = rlx_jv_bool(!rlx_jv_truthy(v));
        return NULL;
    }
    if (!rlx_jv_is_number(v)) {
        if (v.kind == RLX_JV_UNDEFINED) return undefined_error(c, v, "used with a unary operator");
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "bad operand type for unary %s: '%s'",
                              n->kind == RLX_JN_NEG ? "-" : "+", rlx_jv_type_name(v));
    }
    if (n->kind == RLX_JN_POS) *out = v.kind == RLX_JV_BOOL ? rlx_jv_int(v.b) : v;
    else if (v.kind == RLX_JV_FLOAT) *out = rlx_jv_float(-v.f);
    else return int_arith(c, RLX_JOP_SUB, 0, v.kind == RLX_JV_BOOL ? v.b : v.i, out);
    return NULL;
}

static rlx_status eval_inner(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    rlx_jv x, y;
    switch (n->kind) {
    case RLX_JN_CONST: *out = n->value; return NULL;
    case RLX_JN_NAME: *out = lookup(c, n->name); return NULL;
    case RLX_JN_LIST:
    case RLX_JN_TUPLE: return eval_list(c, n, out);
    case RLX_JN_DICT: return eval_dict(c, n, out);
    case RLX_JN_ATTR:
        RLX_TRY(eval(c, n->kids[0], &x));
        at(c, n);
        return rlx_jinja_getattr(c, x, n->name, out);
    case RLX_JN_ITEM: return eval_item(c, n, out);
    case RLX_JN_CALL: return eval_call(c, n, out);
    case RLX_JN_FILTER: return eval_filter(c, n, out);
    case RLX_JN_TEST: return eval_test(c, n, out);
    case RLX_JN_NOT:
    case RLX_JN_NEG:
    case RLX_JN_POS: return eval_unary(c, n, out);
    case RLX_JN_AND:
    case RLX_JN_OR:
        /* Python's and/or yield an operand, not a bool */
        RLX_TRY(eval(c, n->kids[0], &x));
        if (rlx_jv_truthy(x) == (n->kind == RLX_JN_OR)) {
            *out = x;
            return NULL;
        }
        return eval(c, n->kids[1], out);
    case RLX_JN_BINOP:
        RLX_TRY(eval(c, n->kids[0], &x));
        RLX_TRY(eval(c, n->kids[1], &y));
        at(c, n);
        return binop(c, n->op, x, y, out);
    case RLX_JN_CONCAT: return eval_concat(c, n, out);
    case RLX_JN_COMPARE: return eval_compare(c, n, out);
    case RLX_JN_COND:
        RLX_TRY(eval(c, n->kids[1], &x));
        if (rlx_jv_truthy(x)) return eval(c, n->kids[0], out);
        if (n->kids[2]) return eval(c, n->kids[2], out);
        *out = rlx_jv_undefined(NULL);
        return NULL;
    default:
        return rlx_jinja_fail(c, RLX_ERR_INTERNAL, "internal: node kind %d is not an expression", (int)n->kind);
    }
}

static rlx_status eval(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jv *out) {
    RLX_TRY(enter(c, n));
    rlx_status s = eval_inner(c, n, out);
    c->depth--;
    return s;
}

/* ---- statements ---- */

static rlx_status emit(rlx_jinja_ctx *c, const char *p, size_t n) {
    if (rlx_jinja_buf_append(c->out, p, n)) return NULL;
    if (c->out->limit && n > c->out->limit - c->out->n)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "rendered text passed the output limit of %zu bytes",
                              c->lim.max_output);
    return rlx_jinja_fail(c, RLX_ERR_OUT_OF_MEMORY, "out of memory while writing the rendered text");
}

static rlx_status exec_output(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    rlx_jv v;
    RLX_TRY(eval(c, n->kids[0], &v));
    at(c, n);
    if (v.kind == RLX_JV_STR) return emit(c, v.s.p, v.s.n);
    RLX_TRY(located(c, n, rlx_jv_to_str(c->arena, v, &v)));
    return emit(c, v.s.p, v.s.n);
}

/* Binds a loop or set target: a name, or a tuple of names unpacking a list/tuple. */
static rlx_status bind(rlx_jinja_ctx *c, rlx_jinja_frame *f, const rlx_jinja_node *target, rlx_jv v) {
    if (target->kind == RLX_JN_NAME) return assign(c, f, target->name, v);
    if (v.kind != RLX_JV_LIST || v.list->n != target->n_kids) {
        at(c, target);
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT, "cannot unpack a %s of %zu items into %zu names",
                              rlx_jv_type_name(v), v.kind == RLX_JV_LIST ? v.list->n : (size_t)1, target->n_kids);
    }
    for (size_t i = 0; i < target->n_kids; i++) RLX_TRY(assign(c, f, target->kids[i]->name, v.list->items[i]));
    return NULL;
}

static rlx_status exec_set(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    const rlx_jinja_node *target = n->kids[0];
    rlx_jv v;
    if (n->kind == RLX_JN_SET_BLOCK) {
        rlx_jinja_buf *saved = c->out;
        rlx_jinja_buf buf = {.limit = saved->limit - saved->n};
        c->out = &buf;
        rlx_status s = exec(c, n->kids[1]);
        c->out = saved;
        char *text = s ? NULL : rlx_jinja_strndup(c->arena, buf.p ? buf.p : "", buf.n);
        v = rlx_jv_str(text, buf.n);
        rlx_jinja_buf_free(&buf);
        if (s) return s;
        if (!text) return rlx_jinja_oom(c);
    } else {
        RLX_TRY(eval(c, n->kids[1], &v));
    }
    at(c, n);
    if (target->kind != RLX_JN_ATTR) return bind(c, c->frame, target, v);
    rlx_jv ns = lookup(c, target->kids[0]->name);
    if (ns.kind != RLX_JV_NAMESPACE)
        return rlx_jinja_fail(c, RLX_ERR_INVALID_ARGUMENT,
                              "cannot set '%s.%s': '%s' is a %s, and only namespace() objects take attributes",
                              target->kids[0]->name, target->name, target->kids[0]->name, rlx_jv_type_name(ns));
    return rlx_jv_dict_set(c->arena, ns.dict, rlx_jv_cstr(target->name), v) ? NULL : rlx_jinja_oom(c);
}

/* The items a for-loop visits: its iterable, minus those its `if` filter rejects. */
static rlx_status loop_items(rlx_jinja_ctx *c, const rlx_jinja_node *n, rlx_jinja_frame *f, const rlx_jv **items,
                             size_t *count) {
    rlx_jv iter;
    RLX_TRY(eval(c, n->kids[1], &iter));
    at(c, n->kids[1]);
    RLX_TRY(rlx_jinja_iterate(c, iter, items, count));
    if (!n->kids[2]) return NULL;
    rlx_jv *kept = rlx_jinja_alloc(c->arena, (*count ? *count : 1) * sizeof *kept);
    if (!kept) return rlx_jinja_oom(c);
    size_t k = 0;
    rlx_jinja_frame *saved = c->frame;
    rlx_status s = NULL;
    c->frame = f;
    for (size_t i = 0; i < *count && !s; i++) {
        rlx_jv keep;
        f->vars.n = 0;
        if (!(s = bind(c, f, n->kids[0], (*items)[i])) && !(s = eval(c, n->kids[2], &keep)) && rlx_jv_truthy(keep))
            kept[k++] = (*items)[i];
    }
    c->frame = saved;
    *items = kept;
    *count = k;
    return s;
}

static rlx_status exec_for(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    rlx_jinja_frame *f = frame_new(c, c->frame);
    rlx_jv_loop *loop = rlx_jinja_alloc(c->arena, sizeof *loop);
    if (!f || !loop) return rlx_jinja_oom(c);
    const rlx_jv *items;
    size_t count;
    RLX_TRY(loop_items(c, n, f, &items, &count));
    if (count == 0) return n->kids[4] ? exec(c, n->kids[4]) : NULL;
    *loop = (rlx_jv_loop){.items = items, .n = count};
    rlx_jinja_frame *saved = c->frame;
    rlx_status s = NULL;
    c->frame = f;
    for (size_t i = 0; i < count && !s; i++) {
        /* a fresh scope per iteration, as jinja2 gives: `set` does not carry to the next one */
        f->vars.n = 0;
        loop->i = i;
        at(c, n);
        if ((s = step(c, 1)) || (s = bind(c, f, n->kids[0], items[i])) ||
            (s = assign(c, f, "loop", (rlx_jv){.kind = RLX_JV_LOOP, .loop = loop})))
            break;
        s = exec(c, n->kids[3]);
        if (c->jump == JUMP_BREAK) {
            c->jump = JUMP_NONE;
            break;
        }
        c->jump = JUMP_NONE;
    }
    c->frame = saved;
    return s;
}

static rlx_status exec_inner(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    switch (n->kind) {
    case RLX_JN_BODY:
        for (size_t i = 0; i < n->n_kids && c->jump == JUMP_NONE; i++) RLX_TRY(exec(c, n->kids[i]));
        return NULL;
    case RLX_JN_TEXT: return emit(c, n->value.s.p, n->value.s.n);
    case RLX_JN_OUTPUT: return exec_output(c, n);
    case RLX_JN_IF:
        for (size_t i = 0; i + 1 < n->n_kids; i += 2) {
            rlx_jv cond = rlx_jv_bool(true);
            if (n->kids[i]) RLX_TRY(eval(c, n->kids[i], &cond));
            if (rlx_jv_truthy(cond)) return exec(c, n->kids[i + 1]);
        }
        return NULL;
    case RLX_JN_FOR: return exec_for(c, n);
    case RLX_JN_SET:
    case RLX_JN_SET_BLOCK: return exec_set(c, n);
    case RLX_JN_MACRO: {
        rlx_jv_macro *m = rlx_jinja_alloc(c->arena, sizeof *m);
        if (!m) return rlx_jinja_oom(c);
        m->node = n;
        m->scope = c->frame;
        return assign(c, c->frame, n->name, (rlx_jv){.kind = RLX_JV_MACRO, .macro = m});
    }
    case RLX_JN_BREAK: c->jump = JUMP_BREAK; return NULL;
    case RLX_JN_CONTINUE: c->jump = JUMP_CONTINUE; return NULL;
    default: return exec_output(c, n);
    }
}

static rlx_status exec(rlx_jinja_ctx *c, const rlx_jinja_node *n) {
    RLX_TRY(enter(c, n));
    rlx_status s = exec_inner(c, n);
    c->depth--;
    return s;
}

rlx_status rlx_jinja_render(const rlx_jinja_node *root, const char *origin, rlx_jinja_arena *arena,
                            rlx_jv_dict *globals, const rlx_jinja_limits *lim, bool has_now, int64_t now,
                            rlx_jinja_buf *out) {
    rlx_jinja_ctx c = {.origin = origin, .arena = arena, .lim = *lim, .out = out, .has_now = has_now, .now = now};
    out->limit = lim->max_output;
    rlx_jinja_frame *builtins = frame_new(&c, NULL);
    rlx_jinja_frame *user = builtins ? frame_new(&c, builtins) : NULL;
    c.frame = user ? frame_new(&c, user) : NULL;
    if (!c.frame) return rlx_jinja_oom(&c);
    for (int f = 0; f < RLX_JF_COUNT; f++)
        RLX_TRY(assign(&c, builtins, rlx_jinja_func_name((rlx_jinja_func)f), (rlx_jv){.kind = RLX_JV_FUNC, .func = f}));
    user->vars = *globals;
    return exec(&c, root);
}
