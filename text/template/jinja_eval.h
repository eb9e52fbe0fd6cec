/* Evaluator for parsed chat templates (text/template/jinja_parser.h).
 *
 * Scoping follows jinja2: a for-loop body gets a fresh scope on every iteration (so `set` inside
 * a loop is invisible after it and in the next iteration; namespaces are the way out), a macro
 * call gets a scope whose parent is the scope the macro was defined in, and if-blocks share their
 * enclosing scope. Undefined values behave as jinja2's default Undefined: they print as "",
 * iterate as empty, are false, and fail when an attribute or item is read from them.
 *
 * Every render is bounded: evaluation steps (loop iterations, nodes, bytes scanned by string
 * functions), nesting depth (macro recursion, deep expressions), output bytes and arena bytes.
 * Passing a bound is an error naming it, never a hang or a crash. */
#ifndef RLX_TEXT_JINJA_EVAL_H
#define RLX_TEXT_JINJA_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "text/template/jinja_parser.h"
#include "text/template/jinja_value.h"
#include "rlx/status.h"

typedef struct rlx_jinja_limits {
    size_t max_output;  /* bytes of rendered text */
    size_t max_memory;  /* bytes of the render's arena */
    uint64_t max_steps; /* evaluation steps */
    uint32_t max_depth; /* nested evaluations: expressions, statements, macro calls */
} rlx_jinja_limits;

typedef struct rlx_jinja_frame rlx_jinja_frame;

typedef struct rlx_jinja_ctx {
    const char *origin;      /* borrowed: the template's name, for messages */
    rlx_jinja_arena *arena;  /* borrowed: where every value of this render lives */
    rlx_jinja_limits lim;
    uint64_t steps;
    uint32_t depth;
    rlx_jinja_frame *frame;  /* arena: the innermost scope */
    rlx_jinja_buf *out;      /* borrowed: where text goes (a macro call swaps in its own) */
    int jump;                /* a pending break or continue */
    bool has_now;            /* strftime_now uses `now` (seconds since the epoch, UTC) */
    int64_t now;
    uint32_t line, col;      /* the node being evaluated: where builtins' errors point */
} rlx_jinja_ctx;

/* Evaluated call arguments. */
typedef struct rlx_jinja_args {
    const rlx_jv *pos;
    size_t n_pos;
    const char *const *kw_names;
    const rlx_jv *kw;
    size_t n_kw;
} rlx_jinja_args;

/* Renders `root` with `globals` (variables the template sees, e.g. messages) into out.
 * `arena` must outlive nothing but this call's use of the results. */
rlx_status rlx_jinja_render(const rlx_jinja_node *root, const char *origin, rlx_jinja_arena *arena,
                            rlx_jv_dict *globals, const rlx_jinja_limits *lim, bool has_now, int64_t now,
                            rlx_jinja_buf *out);

/* For builtins: an error at the node being evaluated ("origin:line:col: message"). */
rlx_status rlx_jinja_fail(rlx_jinja_ctx *c, rlx_code code, const char *fmt, ...) RLX_PRINTF(3, 4);
/* One level deeper for builtins that recurse (a filter applying a filter): fails past
 * lim.max_depth, as nested evaluation does. Each successful nest is paired with an unnest. */
rlx_status rlx_jinja_nest(rlx_jinja_ctx *c);
void rlx_jinja_unnest(rlx_jinja_ctx *c);
/* The arena refused memory: names the limit. */
rlx_status rlx_jinja_oom(rlx_jinja_ctx *c);
/* Accounts work proportional to `bytes` against the step budget. */
rlx_status rlx_jinja_charge(rlx_jinja_ctx *c, size_t bytes);
/* A list / tuple / dict / string / undefined as an array of items (dicts give their keys,
 * strings their code points as strings). Fails for values that are not iterable. */
rlx_status rlx_jinja_iterate(rlx_jinja_ctx *c, rlx_jv v, const rlx_jv **items, size_t *n);
/* Python == and ordering, with the elements they visit counted against the step budget. */
rlx_status rlx_jinja_equal(rlx_jinja_ctx *c, rlx_jv a, rlx_jv b, bool *out);
rlx_status rlx_jinja_compare(rlx_jinja_ctx *c, rlx_jv a, rlx_jv b, int *cmp);
/* Python's `needle in hay`: substrings, list members, dict keys; false for an undefined hay. */
rlx_status rlx_jinja_contains(rlx_jinja_ctx *c, rlx_jv hay, rlx_jv needle, bool *out);
/* getattr(obj, name) / obj[name] as templates read them: dict keys, namespace attributes, loop
 * fields. Missing ones are undefined; reading from an undefined fails. */
rlx_status rlx_jinja_getattr(rlx_jinja_ctx *c, rlx_jv obj, const char *name, rlx_jv *out);

#endif
