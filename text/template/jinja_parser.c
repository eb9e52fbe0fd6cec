/* Template parser: a recursive descent over jinja2's grammar. See text/template/jinja_parser.h. */
#include "text/template/jinja_parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/template/jinja_builtins.h"

/* Nesting bound (parentheses, unary operators, blocks): keeps the C stack small on hostile input. */
#define MAX_NEST 128

typedef struct parser {
    const rlx_jinja_token *t; /* borrowed, n tokens ending with EOF */
    size_t n, i;
    const char *origin;
    rlx_jinja_arena *a;
    int depth;      /* current nesting */
    int loop_depth; /* enclosing for-loops of the current macro or template body */
} parser;

/* A growable list of child nodes, copied into the arena when the node is made. */
typedef struct kids {
    rlx_jinja_node **v; /* malloc'd */
    size_t n, cap;
} kids;

static const rlx_jinja_token *cur(const parser *P) { return &P->t[P->i]; }
static const rlx_jinja_token *peek(const parser *P, size_t k) {
    return P->i + k < P->n ? &P->t[P->i + k] : &P->t[P->n - 1];
}
static void advance(parser *P) {
    if (P->i + 1 < P->n) P->i++;
}
static bool is_op(const rlx_jinja_token *t, rlx_jinja_op op) { return t->kind == RLX_JT_OP && t->op == op; }
static bool is_name(const rlx_jinja_token *t, const char *name) {
    return t->kind == RLX_JT_NAME && t->n == strlen(name) && memcmp(t->p, name, t->n) == 0;
}

static rlx_status perr(const parser *P, const rlx_jinja_token *t, rlx_code code, const char *fmt, ...)
    RLX_PRINTF(4, 5);
static rlx_status perr(const parser *P, const rlx_jinja_token *t, rlx_code code, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlx_jinja_error(code, P->origin, t->line, t->col, "%s", msg);
}

static rlx_status oom(void) { return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "chat template: out of memory while parsing"); }

/* How a token reads in "unexpected ..." messages. */
static void describe(const rlx_jinja_token *t, char *buf, size_t size) {
    switch (t->kind) {
    case RLX_JT_TEXT: snprintf(buf, size, "template text"); break;
    case RLX_JT_VAR_BEGIN: snprintf(buf, size, "'{{'"); break;
    case RLX_JT_VAR_END: snprintf(buf, size, "'}}'"); break;
    case RLX_JT_BLOCK_BEGIN: snprintf(buf, size, "'{%%'"); break;
    case RLX_JT_BLOCK_END: snprintf(buf, size, "'%%}'"); break;
    case RLX_JT_NAME: snprintf(buf, size, "'%.*s'", (int)(t->n > 40 ? 40 : t->n), t->p); break;
    case RLX_JT_STRING: snprintf(buf, size, "a string"); break;
    case RLX_JT_INT:
    case RLX_JT_FLOAT: snprintf(buf, size, "a number"); break;
    case RLX_JT_OP: snprintf(buf, size, "'%s'", rlx_jinja_op_text(t->op)); break;
    case RLX_JT_EOF: snprintf(buf, size, "the end of the template"); break;
    }
}

static rlx_status unexpected(const parser *P, const char *expected) {
    char what[64];
    describe(cur(P), what, sizeof what);
    if (expected) return perr(P, cur(P), RLX_ERR_BAD_FILE, "unexpected %s, expected %s", what, expected);
    return perr(P, cur(P), RLX_ERR_BAD_FILE, "unexpected %s", what);
}

static rlx_status expect_op(parser *P, rlx_jinja_op op) {
    if (!is_op(cur(P), op)) {
        char want[16];
        snprintf(want, sizeof want, "'%s'", rlx_jinja_op_text(op));
        return unexpected(P, want);
    }
    advance(P);
    return NULL;
}

static rlx_status expect_kind(parser *P, rlx_jinja_tok_kind kind, const char *what) {
    if (cur(P)->kind != kind) return unexpected(P, what);
    advance(P);
    return NULL;
}

static rlx_status new_node(parser *P, rlx_jinja_node_kind kind, const rlx_jinja_token *at, rlx_jinja_node **out) {
    rlx_jinja_node *n = rlx_jinja_alloc(P->a, sizeof *n);
    if (!n) return oom();
    n->kind = kind;
    n->line = at->line;
    n->col = at->col;
    *out = n;
    return NULL;
}

static rlx_status set_name(parser *P, rlx_jinja_node *n, const rlx_jinja_token *t) {
    char *s = rlx_jinja_strndup(P->a, t->p, t->n);
    if (!s) return oom();
    n->name = s;
    return NULL;
}

static rlx_status kids_push(kids *k, rlx_jinja_node *n) {
    if (k->n == k->cap) {
        size_t cap = k->cap ? k->cap * 2 : 8;
        rlx_jinja_node **v = realloc(k->v, cap * sizeof *v);
        if (!v) return oom();
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = n;
    return NULL;
}

/* Moves the collected children into the node (the list is freed either way). */
static rlx_status kids_take(parser *P, kids *k, rlx_jinja_node *n) {
    rlx_status s = NULL;
    if (k->n) {
        n->kids = rlx_jinja_alloc(P->a, k->n * sizeof *n->kids);
        if (n->kids) {
            memcpy(n->kids, k->v, k->n * sizeof *n->kids);
            n->n_kids = k->n;
        } else {
            s = oom();
        }
    }
    free(k->v);
    *k = (kids){0};
    return s;
}

/* A node with up to 5 fixed children (NULLs allowed). */
static rlx_status node_with(parser *P, rlx_jinja_node_kind kind, const rlx_jinja_token *at, rlx_jinja_node **out,
                            size_t nk, rlx_jinja_node *k0, rlx_jinja_node *k1, rlx_jinja_node *k2,
                            rlx_jinja_node *k3, rlx_jinja_node *k4) {
    RLX_TRY(new_node(P, kind, at, out));
    rlx_jinja_node *all[5] = {k0, k1, k2, k3, k4};
    if (nk) {
        (*out)->kids = rlx_jinja_alloc(P->a, nk * sizeof(rlx_jinja_node *));
        if (!(*out)->kids) return oom();
        memcpy((*out)->kids, all, nk * sizeof(rlx_jinja_node *));
        (*out)->n_kids = nk;
    }
    return NULL;
}

static rlx_status enter(parser *P) {
    if (++P->depth > MAX_NEST)
        return perr(P, cur(P), RLX_ERR_BAD_FILE, "template nests deeper than %d levels", MAX_NEST);
    return NULL;
}

/* ---- expressions ---- */

static rlx_status parse_expression(parser *P, bool with_condexpr, rlx_jinja_node **out);
static rlx_status parse_unary(parser *P, bool with_filter, rlx_jinja_node **out);
static rlx_status parse_primary(parser *P, bool with_namespace, rlx_jinja_node **out);
static rlx_status parse_postfix(parser *P, rlx_jinja_node **node);

/* Ends a tuple without a closing bracket: a tag end, ')' or the name in extra_end. */
static bool tuple_end(const parser *P, const char *extra_end) {
    const rlx_jinja_token *t = cur(P);
    return t->kind == RLX_JT_VAR_END || t->kind == RLX_JT_BLOCK_END || is_op(t, RLX_JOP_RPAREN) ||
           (extra_end && is_name(t, extra_end));
}

/* jinja2's parse_tuple: one expression, or a TUPLE when commas separate several. `simplified`
 * parses only primaries (assignment targets). */
static rlx_status parse_tuple(parser *P, bool simplified, bool with_condexpr, const char *extra_end,
                              bool explicit_parens, bool with_namespace, rlx_jinja_node **out) {
    const rlx_jinja_token *start = cur(P);
    kids k = {0};
    bool is_tuple = false;
    rlx_status s = NULL;
    for (;;) {
        if (k.n && (s = expect_op(P, RLX_JOP_COMMA))) break;
        if (tuple_end(P, extra_end)) break;
        rlx_jinja_node *item = NULL;
        s = simplified ? parse_primary(P, with_namespace, &item) : parse_expression(P, with_condexpr, &item);
        if (!s) s = kids_push(&k, item);
        if (s) break;
        if (!is_op(cur(P), RLX_JOP_COMMA)) break;
        is_tuple = true;
    }
    if (!s && !is_tuple && k.n == 1) {
        *out = k.v[0];
        free(k.v);
        return NULL;
    }
    if (!s && !is_tuple && !explicit_parens) s = unexpected(P, "an expression");
    if (s) {
        free(k.v);
        return s;
    }
    rlx_jinja_node *n = NULL;
    if ((s = new_node(P, RLX_JN_TUPLE, start, &n))) {
        free(k.v);
        return s;
    }
    RLX_TRY(kids_take(P, &k, n));
    *out = n;
    return NULL;
}

static rlx_status parse_list_or_dict(parser *P, bool dict, rlx_jinja_node **out) {
    const rlx_jinja_token *start = cur(P);
    rlx_jinja_op close = dict ? RLX_JOP_RBRACE : RLX_JOP_RBRACKET;
    advance(P);
    kids k = {0};
    rlx_status s = NULL;
    while (!s && !is_op(cur(P), close)) {
        if (k.n && (s = expect_op(P, RLX_JOP_COMMA))) break;
        if (is_op(cur(P), close)) break;
        rlx_jinja_node *item = NULL;
        if ((s = parse_expression(P, true, &item)) || (s = kids_push(&k, item))) break;
        if (dict && !(s = expect_op(P, RLX_JOP_COLON)) && !(s = parse_expression(P, true, &item)))
            s = kids_push(&k, item);
    }
    if (!s) s = expect_op(P, close);
    rlx_jinja_node *n = NULL;
    if (!s) s = new_node(P, dict ? RLX_JN_DICT : RLX_JN_LIST, start, &n);
    if (s) {
        free(k.v);
        return s;
    }
    RLX_TRY(kids_take(P, &k, n));
    *out = n;
    return NULL;
}

static rlx_status string_const(parser *P, rlx_jinja_node *n) {
    /* adjacent literals concatenate: 'a' "b" is 'ab' */
    size_t total = 0;
    for (size_t j = P->i; P->t[j].kind == RLX_JT_STRING; j++) total += P->t[j].n;
    char *s = rlx_jinja_alloc(P->a, total + 1);
    if (!s) return oom();
    size_t o = 0;
    while (cur(P)->kind == RLX_JT_STRING) {
        memcpy(s + o, cur(P)->p, cur(P)->n);
        o += cur(P)->n;
        advance(P);
    }
    n->value = rlx_jv_str(s, o);
    return NULL;
}

static rlx_status parse_primary(parser *P, bool with_namespace, rlx_jinja_node **out) {
    const rlx_jinja_token *t = cur(P);
    rlx_jinja_node *n = NULL;
    switch (t->kind) {
    case RLX_JT_NAME:
        if (is_name(t, "true") || is_name(t, "True") || is_name(t, "false") || is_name(t, "False")) {
            RLX_TRY(new_node(P, RLX_JN_CONST, t, &n));
            n->value = rlx_jv_bool(t->p[0] == 't' || t->p[0] == 'T');
        } else if (is_name(t, "none") || is_name(t, "None")) {
            RLX_TRY(new_node(P, RLX_JN_CONST, t, &n));
            n->value = rlx_jv_none();
        } else if (with_namespace && is_op(peek(P, 1), RLX_JOP_DOT)) {
            /* `set ns.attr = ...`: a namespace attribute as an assignment target */
            rlx_jinja_node *base = NULL;
            RLX_TRY(new_node(P, RLX_JN_NAME, t, &base));
            RLX_TRY(set_name(P, base, t));
            advance(P);
            advance(P);
            if (cur(P)->kind != RLX_JT_NAME) return unexpected(P, "an attribute name");
            RLX_TRY(node_with(P, RLX_JN_ATTR, t, &n, 1, base, NULL, NULL, NULL, NULL));
            RLX_TRY(set_name(P, n, cur(P)));
        } else {
            RLX_TRY(new_node(P, RLX_JN_NAME, t, &n));
            RLX_TRY(set_name(P, n, t));
        }
        advance(P);
        break;
    case RLX_JT_STRING:
        RLX_TRY(new_node(P, RLX_JN_CONST, t, &n));
        RLX_TRY(string_const(P, n));
        break;
    case RLX_JT_INT:
    case RLX_JT_FLOAT:
        RLX_TRY(new_node(P, RLX_JN_CONST, t, &n));
        n->value = t->kind == RLX_JT_INT ? rlx_jv_int(t->i) : rlx_jv_float(t->f);
        advance(P);
        break;
    case RLX_JT_OP:
        if (t->op == RLX_JOP_LPAREN) {
            advance(P);
            RLX_TRY(enter(P));
            RLX_TRY(parse_tuple(P, false, true, NULL, true, false, &n));
            P->depth--;
            RLX_TRY(expect_op(P, RLX_JOP_RPAREN));
            break;
        }
        if (t->op == RLX_JOP_LBRACKET || t->op == RLX_JOP_LBRACE) {
            RLX_TRY(enter(P));
            RLX_TRY(parse_list_or_dict(P, t->op == RLX_JOP_LBRACE, &n));
            P->depth--;
            break;
        }
        return unexpected(P, "an expression");
    default: return unexpected(P, "an expression");
    }
    *out = n;
    return NULL;
}

/* (args) of a call, filter or test: positional arguments, then name=value keywords. */
static rlx_status parse_call_args(parser *P, kids *k) {
    RLX_TRY(expect_op(P, RLX_JOP_LPAREN));
    bool seen_kw = false;
    for (size_t n_args = 0; !is_op(cur(P), RLX_JOP_RPAREN); n_args++) {
        if (n_args) {
            RLX_TRY(expect_op(P, RLX_JOP_COMMA));
            if (is_op(cur(P), RLX_JOP_RPAREN)) break;
        }
        const rlx_jinja_token *t = cur(P);
        if (is_op(t, RLX_JOP_MUL) || is_op(t, RLX_JOP_POW))
            return perr(P, t, RLX_ERR_UNSUPPORTED, "unsupported: '%s' argument unpacking in calls",
                        rlx_jinja_op_text(t->op));
        rlx_jinja_node *arg = NULL;
        if (t->kind == RLX_JT_NAME && is_op(peek(P, 1), RLX_JOP_ASSIGN)) {
            advance(P);
            advance(P);
            rlx_jinja_node *value = NULL;
            RLX_TRY(parse_expression(P, true, &value));
            RLX_TRY(node_with(P, RLX_JN_KWARG, t, &arg, 1, value, NULL, NULL, NULL, NULL));
            RLX_TRY(set_name(P, arg, t));
            seen_kw = true;
        } else {
            if (seen_kw) return perr(P, t, RLX_ERR_BAD_FILE, "positional argument follows keyword argument");
            RLX_TRY(parse_expression(P, true, &arg));
        }
        RLX_TRY(kids_push(k, arg));
    }
    advance(P);
    return NULL;
}

/* A call/filter/test node: kids[0] is the operand (or callee), then the arguments. */
static rlx_status with_args(parser *P, rlx_jinja_node_kind kind, const rlx_jinja_token *at, rlx_jinja_node *first,
                            bool has_args, rlx_jinja_node **out) {
    kids k = {0};
    rlx_status s = kids_push(&k, first);
    if (!s && has_args) s = parse_call_args(P, &k);
    if (!s) s = new_node(P, kind, at, out);
    if (s) {
        free(k.v);
        return s;
    }
    if (kind == RLX_JN_CALL) {
        /* a call's errors point at what is called, not at its '(' */
        (*out)->line = first->line;
        (*out)->col = first->col;
    }
    return kids_take(P, &k, *out);
}

static rlx_status parse_slice_part(parser *P, rlx_jinja_node **out) {
    *out = NULL;
    if (is_op(cur(P), RLX_JOP_COLON) || is_op(cur(P), RLX_JOP_RBRACKET) || is_op(cur(P), RLX_JOP_COMMA))
        return NULL;
    return parse_expression(P, true, out);
}

/* One subscript: an expression or a slice a:b:c (each part optional). */
static rlx_status parse_subscribed(parser *P, rlx_jinja_node **out) {
    const rlx_jinja_token *start = cur(P);
    rlx_jinja_node *parts[3] = {NULL, NULL, NULL};
    RLX_TRY(parse_slice_part(P, &parts[0]));
    if (!is_op(cur(P), RLX_JOP_COLON)) {
        if (!parts[0]) return unexpected(P, "a subscript");
        *out = parts[0];
        return NULL;
    }
    advance(P);
    RLX_TRY(parse_slice_part(P, &parts[1]));
    if (is_op(cur(P), RLX_JOP_COLON)) {
        advance(P);
        RLX_TRY(parse_slice_part(P, &parts[2]));
    }
    return node_with(P, RLX_JN_SLICE, start, out, 3, parts[0], parts[1], parts[2], NULL, NULL);
}

static rlx_status parse_subscript(parser *P, rlx_jinja_node **node) {
    const rlx_jinja_token *t = cur(P);
    advance(P);
    if (t->op == RLX_JOP_DOT) {
        const rlx_jinja_token *attr = cur(P);
        if (attr->kind == RLX_JT_NAME) {
            advance(P);
            RLX_TRY(node_with(P, RLX_JN_ATTR, t, node, 1, *node, NULL, NULL, NULL, NULL));
            return set_name(P, *node, attr);
        }
        if (attr->kind != RLX_JT_INT) return unexpected(P, "an attribute name or number");
        rlx_jinja_node *index = NULL;
        RLX_TRY(new_node(P, RLX_JN_CONST, attr, &index));
        index->value = rlx_jv_int(attr->i);
        advance(P);
        return node_with(P, RLX_JN_ITEM, t, node, 2, *node, index, NULL, NULL, NULL);
    }
    kids k = {0};
    rlx_status s = NULL;
    while (!s && !is_op(cur(P), RLX_JOP_RBRACKET)) {
        if (k.n && (s = expect_op(P, RLX_JOP_COMMA))) break;
        rlx_jinja_node *sub = NULL;
        if (!(s = parse_subscribed(P, &sub))) s = kids_push(&k, sub);
    }
    if (!s) s = expect_op(P, RLX_JOP_RBRACKET);
    if (!s && k.n == 0) s = perr(P, t, RLX_ERR_BAD_FILE, "empty subscript '[]'");
    rlx_jinja_node *index = k.n == 1 ? k.v[0] : NULL;
    if (!s && !index && !(s = new_node(P, RLX_JN_TUPLE, t, &index))) {
        s = kids_take(P, &k, index);
    }
    free(k.v);
    if (s) return s;
    return node_with(P, RLX_JN_ITEM, t, node, 2, *node, index, NULL, NULL, NULL);
}

static rlx_status parse_postfix(parser *P, rlx_jinja_node **node) {
    for (;;) {
        const rlx_jinja_token *t = cur(P);
        if (is_op(t, RLX_JOP_DOT) || is_op(t, RLX_JOP_LBRACKET)) RLX_TRY(parse_subscript(P, node));
        else if (is_op(t, RLX_JOP_LPAREN)) RLX_TRY(with_args(P, RLX_JN_CALL, t, *node, true, node));
        else return NULL;
    }
}

static rlx_status parse_filter(parser *P, rlx_jinja_node **node) {
    advance(P); /* | */
    const rlx_jinja_token *t = cur(P);
    if (t->kind != RLX_JT_NAME) return unexpected(P, "a filter name");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(t->n > 63 ? 63 : t->n), t->p);
    int id = rlx_jinja_filter_find(name);
    if (id < 0 && rlx_jinja_filter_is_jinja(name))
        return perr(P, t, RLX_ERR_UNSUPPORTED, "unsupported filter '%s' (a jinja2 builtin that rlx does not implement)",
                    name);
    if (id < 0) return perr(P, t, RLX_ERR_BAD_FILE, "unknown filter '%s'", name);
    advance(P);
    RLX_TRY(with_args(P, RLX_JN_FILTER, t, *node, is_op(cur(P), RLX_JOP_LPAREN), node));
    (*node)->id = id;
    return set_name(P, *node, t);
}

static rlx_status parse_test(parser *P, rlx_jinja_node **node) {
    advance(P); /* is */
    bool negated = false;
    if (is_name(cur(P), "not")) {
        negated = true;
        advance(P);
    }
    const rlx_jinja_token *t = cur(P);
    if (t->kind != RLX_JT_NAME) return unexpected(P, "a test name");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(t->n > 63 ? 63 : t->n), t->p);
    int id = rlx_jinja_test_find(name);
    if (id < 0 && rlx_jinja_test_is_jinja(name))
        return perr(P, t, RLX_ERR_UNSUPPORTED, "unsupported test '%s' (a jinja2 builtin that rlx does not implement)",
                    name);
    if (id < 0) return perr(P, t, RLX_ERR_BAD_FILE, "unknown test '%s'", name);
    advance(P);
    const rlx_jinja_token *a = cur(P);
    if (is_op(a, RLX_JOP_LPAREN)) {
        RLX_TRY(with_args(P, RLX_JN_TEST, t, *node, true, node));
    } else if ((a->kind == RLX_JT_NAME || a->kind == RLX_JT_STRING || a->kind == RLX_JT_INT ||
                a->kind == RLX_JT_FLOAT || is_op(a, RLX_JOP_LBRACKET) || is_op(a, RLX_JOP_LBRACE)) &&
               !is_name(a, "else") && !is_name(a, "or") && !is_name(a, "and")) {
        /* jinja2 takes one bare argument: `x is divisibleby 3` */
        if (is_name(a, "is")) return perr(P, a, RLX_ERR_BAD_FILE, "tests cannot be chained with 'is'");
        rlx_jinja_node *arg = NULL;
        RLX_TRY(parse_primary(P, false, &arg));
        RLX_TRY(parse_postfix(P, &arg));
        RLX_TRY(node_with(P, RLX_JN_TEST, t, node, 2, *node, arg, NULL, NULL, NULL));
    } else {
        RLX_TRY(node_with(P, RLX_JN_TEST, t, node, 1, *node, NULL, NULL, NULL, NULL));
    }
    (*node)->id = id;
    (*node)->negated = negated;
    return set_name(P, *node, t);
}

static rlx_status parse_unary(parser *P, bool with_filter, rlx_jinja_node **out) {
    const rlx_jinja_token *t = cur(P);
    RLX_TRY(enter(P));
    if (is_op(t, RLX_JOP_SUB) || is_op(t, RLX_JOP_ADD)) {
        advance(P);
        rlx_jinja_node *operand = NULL;
        RLX_TRY(parse_unary(P, false, &operand));
        RLX_TRY(node_with(P, t->op == RLX_JOP_SUB ? RLX_JN_NEG : RLX_JN_POS, t, out, 1, operand, NULL, NULL, NULL,
                          NULL));
    } else {
        RLX_TRY(parse_primary(P, false, out));
    }
    RLX_TRY(parse_postfix(P, out));
    while (with_filter) {
        const rlx_jinja_token *f = cur(P);
        if (is_op(f, RLX_JOP_PIPE)) RLX_TRY(parse_filter(P, out));
        else if (is_name(f, "is")) RLX_TRY(parse_test(P, out));
        else if (is_op(f, RLX_JOP_LPAREN)) RLX_TRY(with_args(P, RLX_JN_CALL, f, *out, true, out));
        else break;
    }
    P->depth--;
    return NULL;
}

/* Left-associative binary levels: ** ; * / // % ; ~ ; + - */
static rlx_status parse_pow(parser *P, rlx_jinja_node **out) {
    RLX_TRY(parse_unary(P, true, out));
    while (is_op(cur(P), RLX_JOP_POW)) {
        const rlx_jinja_token *t = cur(P);
        advance(P);
        rlx_jinja_node *right = NULL;
        RLX_TRY(parse_unary(P, true, &right));
        RLX_TRY(node_with(P, RLX_JN_BINOP, t, out, 2, *out, right, NULL, NULL, NULL));
        (*out)->op = RLX_JOP_POW;
    }
    return NULL;
}

static rlx_status parse_math2(parser *P, rlx_jinja_node **out) {
    RLX_TRY(parse_pow(P, out));
    for (;;) {
        const rlx_jinja_token *t = cur(P);
        if (!(is_op(t, RLX_JOP_MUL) || is_op(t, RLX_JOP_DIV) || is_op(t, RLX_JOP_FLOORDIV) || is_op(t, RLX_JOP_MOD)))
            return NULL;
        advance(P);
        rlx_jinja_node *right = NULL;
        RLX_TRY(parse_pow(P, &right));
        RLX_TRY(node_with(P, RLX_JN_BINOP, t, out, 2, *out, right, NULL, NULL, NULL));
        (*out)->op = t->op;
    }
}

static rlx_status parse_concat(parser *P, rlx_jinja_node **out) {
    const rlx_jinja_token *start = cur(P);
    rlx_jinja_node *first = NULL;
    RLX_TRY(parse_math2(P, &first));
    if (!is_op(cur(P), RLX_JOP_TILDE)) {
        *out = first;
        return NULL;
    }
    kids k = {0};
    rlx_status s = kids_push(&k, first);
    while (!s && is_op(cur(P), RLX_JOP_TILDE)) {
        advance(P);
        rlx_jinja_node *next = NULL;
        if (!(s = parse_math2(P, &next))) s = kids_push(&k, next);
    }
    if (!s) s = new_node(P, RLX_JN_CONCAT, start, out);
    if (s) {
        free(k.v);
        return s;
    }
    return kids_take(P, &k, *out);
}

static rlx_status parse_math1(parser *P, rlx_jinja_node **out) {
    RLX_TRY(parse_concat(P, out));
    for (;;) {
        const rlx_jinja_token *t = cur(P);
        if (!is_op(t, RLX_JOP_ADD) && !is_op(t, RLX_JOP_SUB)) return NULL;
        advance(P);
        rlx_jinja_node *right = NULL;
        RLX_TRY(parse_concat(P, &right));
        RLX_TRY(node_with(P, RLX_JN_BINOP, t, out, 2, *out, right, NULL, NULL, NULL));
        (*out)->op = t->op;
    }
}

static bool compare_op(const parser *P, rlx_jinja_op *op, int *len) {
    const rlx_jinja_token *t = cur(P);
    if (t->kind == RLX_JT_OP && (t->op == RLX_JOP_EQ || t->op == RLX_JOP_NE || t->op == RLX_JOP_LT ||
                                 t->op == RLX_JOP_GT || t->op == RLX_JOP_LE || t->op == RLX_JOP_GE)) {
        *op = t->op;
        *len = 1;
        return true;
    }
    if (is_name(t, "in")) {
        *op = RLX_JOP_IN;
        *len = 1;
        return true;
    }
    if (is_name(t, "not") && is_name(peek(P, 1), "in")) {
        *op = RLX_JOP_NOT_IN;
        *len = 2;
        return true;
    }
    return false;
}

static rlx_status parse_compare(parser *P, rlx_jinja_node **out) {
    const rlx_jinja_token *start = cur(P);
    rlx_jinja_node *first = NULL;
    RLX_TRY(parse_math1(P, &first));
    rlx_jinja_op op;
    int len;
    if (!compare_op(P, &op, &len)) {
        *out = first;
        return NULL;
    }
    kids k = {0};
    rlx_jinja_op ops[MAX_NEST];
    size_t n_ops = 0;
    rlx_status s = kids_push(&k, first);
    while (!s && compare_op(P, &op, &len)) {
        if (n_ops == MAX_NEST) {
            s = perr(P, cur(P), RLX_ERR_BAD_FILE, "more than %d chained comparisons", MAX_NEST);
            break;
        }
        ops[n_ops++] = op;
        for (int i = 0; i < len; i++) advance(P);
        rlx_jinja_node *next = NULL;
        if (!(s = parse_math1(P, &next))) s = kids_push(&k, next);
    }
    if (!s) s = new_node(P, RLX_JN_COMPARE, start, out);
    if (!s) {
        (*out)->ops = rlx_jinja_alloc(P->a, n_ops * sizeof *ops);
        if ((*out)->ops) memcpy((*out)->ops, ops, n_ops * sizeof *ops);
        else s = oom();
    }
    if (s) {
        free(k.v);
        return s;
    }
    return kids_take(P, &k, *out);
}

static rlx_status parse_not(parser *P, rlx_jinja_node **out) {
    const rlx_jinja_token *t = cur(P);
    if (!is_name(t, "not")) return parse_compare(P, out);
    advance(P);
    RLX_TRY(enter(P));
    rlx_jinja_node *operand = NULL;
    RLX_TRY(parse_not(P, &operand));
    P->depth--;
    return node_with(P, RLX_JN_NOT, t, out, 1, operand, NULL, NULL, NULL, NULL);
}

static rlx_status parse_and(parser *P, rlx_jinja_node **out) {
    RLX_TRY(parse_not(P, out));
    while (is_name(cur(P), "and")) {
        const rlx_jinja_token *t = cur(P);
        advance(P);
        rlx_jinja_node *right = NULL;
        RLX_TRY(parse_not(P, &right));
        RLX_TRY(node_with(P, RLX_JN_AND, t, out, 2, *out, right, NULL, NULL, NULL));
    }
    return NULL;
}

static rlx_status parse_or(parser *P, rlx_jinja_node **out) {
    RLX_TRY(parse_and(P, out));
    while (is_name(cur(P), "or")) {
        const rlx_jinja_token *t = cur(P);
        advance(P);
        rlx_jinja_node *right = NULL;
        RLX_TRY(parse_and(P, &right));
        RLX_TRY(node_with(P, RLX_JN_OR, t, out, 2, *out, right, NULL, NULL, NULL));
    }
    return NULL;
}

static rlx_status parse_expression(parser *P, bool with_condexpr, rlx_jinja_node **out) {
    RLX_TRY(enter(P));
    RLX_TRY(parse_or(P, out));
    while (with_condexpr && is_name(cur(P), "if")) {
        /* a if cond [else b]: the else part is itself a conditional expression */
        const rlx_jinja_token *t = cur(P);
        advance(P);
        rlx_jinja_node *cond = NULL, *other = NULL;
        RLX_TRY(parse_or(P, &cond));
        if (is_name(cur(P), "else")) {
            advance(P);
            RLX_TRY(parse_expression(P, true, &other));
        }
        RLX_TRY(node_with(P, RLX_JN_COND, t, out, 3, *out, cond, other, NULL, NULL));
    }
    P->depth--;
    return NULL;
}

/* ---- statements ---- */

static rlx_status parse_body(parser *P, const char *const *ends, const rlx_jinja_token *opener,
                             rlx_jinja_node **out);

static bool in_list(const rlx_jinja_token *t, const char *const *names) {
    for (; names && *names; names++)
        if (is_name(t, *names)) return true;
    return false;
}

/* The rest of a block tag (`%}`), then a body up to one of `ends`; P stops on that end's name. */
static rlx_status parse_block(parser *P, const char *const *ends, const rlx_jinja_token *opener,
                              rlx_jinja_node **out) {
    if (is_op(cur(P), RLX_JOP_COLON)) advance(P); /* jinja2 accepts Python's `:` */
    RLX_TRY(expect_kind(P, RLX_JT_BLOCK_END, "'%}'"));
    RLX_TRY(enter(P));
    RLX_TRY(parse_body(P, ends, opener, out));
    P->depth--;
    return NULL;
}

/* Consumes an end tag's name and its `%}`. */
static rlx_status end_tag(parser *P) {
    advance(P);
    return expect_kind(P, RLX_JT_BLOCK_END, "'%}'");
}

static rlx_status parse_if(parser *P, const rlx_jinja_token *opener, rlx_jinja_node **out) {
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    kids k = {0};
    rlx_status s = NULL;
    advance(P); /* if */
    for (;;) {
        rlx_jinja_node *cond = NULL, *body = NULL;
        if ((s = parse_tuple(P, false, false, NULL, false, false, &cond))) break;
        if ((s = parse_block(P, ends, opener, &body))) break;
        if ((s = kids_push(&k, cond)) || (s = kids_push(&k, body))) break;
        if (is_name(cur(P), "elif")) {
            advance(P);
            continue;
        }
        if (is_name(cur(P), "else")) {
            advance(P);
            if ((s = parse_block(P, endif, opener, &body)) || (s = kids_push(&k, NULL)) ||
                (s = kids_push(&k, body)))
                break;
        }
        s = end_tag(P);
        break;
    }
    if (!s) s = new_node(P, RLX_JN_IF, opener, out);
    if (s) {
        free(k.v);
        return s;
    }
    return kids_take(P, &k, *out);
}

/* Names (or a tuple of names) to assign to; with_namespace also allows ns.attr. */
static rlx_status parse_target(parser *P, const char *extra_end, bool with_namespace, rlx_jinja_node **out) {
    RLX_TRY(parse_tuple(P, true, true, extra_end, false, with_namespace, out));
    rlx_jinja_node *t = *out;
    bool ok = t->kind == RLX_JN_NAME || (t->kind == RLX_JN_ATTR && with_namespace);
    if (t->kind == RLX_JN_TUPLE) {
        ok = true;
        for (size_t i = 0; i < t->n_kids; i++) ok = ok && t->kids[i]->kind == RLX_JN_NAME;
    }
    if (!ok) return rlx_jinja_error(RLX_ERR_BAD_FILE, P->origin, t->line, t->col, "cannot assign to this expression");
    return NULL;
}

static rlx_status parse_for(parser *P, const rlx_jinja_token *opener, rlx_jinja_node **out) {
    static const char *const ends[] = {"else", "endfor", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    advance(P); /* for */
    rlx_jinja_node *target = NULL, *iter = NULL, *filter = NULL, *body = NULL, *else_body = NULL;
    RLX_TRY(parse_target(P, "in", false, &target));
    if (!is_name(cur(P), "in")) return unexpected(P, "'in'");
    advance(P);
    RLX_TRY(parse_tuple(P, false, false, "recursive", false, false, &iter));
    if (is_name(cur(P), "if")) {
        advance(P);
        RLX_TRY(parse_expression(P, true, &filter));
    }
    if (is_name(cur(P), "recursive"))
        return perr(P, cur(P), RLX_ERR_UNSUPPORTED, "unsupported: recursive for-loops");
    P->loop_depth++;
    RLX_TRY(parse_block(P, ends, opener, &body));
    P->loop_depth--;
    if (is_name(cur(P), "else")) {
        advance(P);
        RLX_TRY(parse_block(P, endfor, opener, &else_body));
    }
    RLX_TRY(end_tag(P));
    return node_with(P, RLX_JN_FOR, opener, out, 5, target, iter, filter, body, else_body);
}

static rlx_status parse_set(parser *P, const rlx_jinja_token *opener, rlx_jinja_node **out) {
    static const char *const endset[] = {"endset", NULL};
    advance(P); /* set */
    rlx_jinja_node *target = NULL, *value = NULL;
    RLX_TRY(parse_target(P, NULL, true, &target));
    if (is_op(cur(P), RLX_JOP_ASSIGN)) {
        advance(P);
        RLX_TRY(parse_tuple(P, false, true, NULL, false, false, &value));
        RLX_TRY(expect_kind(P, RLX_JT_BLOCK_END, "'%}'"));
        return node_with(P, RLX_JN_SET, opener, out, 2, target, value, NULL, NULL, NULL);
    }
    if (is_op(cur(P), RLX_JOP_PIPE))
        return perr(P, cur(P), RLX_ERR_UNSUPPORTED, "unsupported: filters on a '{%% set %%}' block");
    if (target->kind != RLX_JN_NAME) return unexpected(P, "'='");
    RLX_TRY(parse_block(P, endset, opener, &value));
    RLX_TRY(end_tag(P));
    return node_with(P, RLX_JN_SET_BLOCK, opener, out, 2, target, value, NULL, NULL, NULL);
}

static rlx_status parse_macro(parser *P, const rlx_jinja_token *opener, rlx_jinja_node **out) {
    static const char *const endmacro[] = {"endmacro", NULL};
    advance(P); /* macro */
    const rlx_jinja_token *name = cur(P);
    if (name->kind != RLX_JT_NAME) return unexpected(P, "a macro name");
    advance(P);
    RLX_TRY(expect_op(P, RLX_JOP_LPAREN));
    kids k = {0};
    rlx_status s = NULL;
    bool defaults = false;
    while (!s && !is_op(cur(P), RLX_JOP_RPAREN)) {
        if (k.n && (s = expect_op(P, RLX_JOP_COMMA))) break;
        const rlx_jinja_token *pt = cur(P);
        if (pt->kind != RLX_JT_NAME) {
            s = unexpected(P, "a parameter name");
            break;
        }
        advance(P);
        rlx_jinja_node *def = NULL, *param = NULL;
        if (is_op(cur(P), RLX_JOP_ASSIGN)) {
            advance(P);
            s = parse_expression(P, true, &def);
            defaults = true;
        } else if (defaults) {
            s = perr(P, pt, RLX_ERR_BAD_FILE, "parameter without a default follows one with a default");
        }
        if (!s) s = node_with(P, RLX_JN_PARAM, pt, &param, 1, def, NULL, NULL, NULL, NULL);
        if (!s) s = set_name(P, param, pt);
        if (!s) s = kids_push(&k, param);
    }
    if (!s) s = expect_op(P, RLX_JOP_RPAREN);
    int saved_loops = P->loop_depth;
    P->loop_depth = 0; /* break/continue cannot reach a loop outside the macro */
    rlx_jinja_node *body = NULL;
    if (!s) s = parse_block(P, endmacro, opener, &body);
    P->loop_depth = saved_loops;
    if (!s) s = end_tag(P);
    if (!s) s = kids_push(&k, body);
    if (!s) s = new_node(P, RLX_JN_MACRO, opener, out);
    if (!s) s = set_name(P, *out, name);
    if (s) {
        free(k.v);
        return s;
    }
    return kids_take(P, &k, *out);
}

static rlx_status parse_statement(parser *P, const rlx_jinja_token *opener, const char *const *ends,
                                  rlx_jinja_node **out) {
    static const char *const unsupported[] = {"call", "filter", "include", "import", "from", "extends", "block",
                                              "with", "autoescape", "do", "print", "generation", "trans", NULL};
    static const char *const stray[] = {"elif", "else", "endif", "endfor", "endset", "endmacro", "endraw",
                                        "endcall", "endfilter", "endblock", "endwith", "endautoescape",
                                        "endgeneration", "endtrans", NULL};
    const rlx_jinja_token *t = cur(P);
    if (t->kind != RLX_JT_NAME) return unexpected(P, "a statement name after '{%'");
    if (is_name(t, "if")) return parse_if(P, opener, out);
    if (is_name(t, "for")) return parse_for(P, opener, out);
    if (is_name(t, "set")) return parse_set(P, opener, out);
    if (is_name(t, "macro")) return parse_macro(P, opener, out);
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(t->n > 63 ? 63 : t->n), t->p);
    if (is_name(t, "break") || is_name(t, "continue")) {
        if (P->loop_depth == 0) return perr(P, t, RLX_ERR_BAD_FILE, "'{%% %s %%}' outside a for-loop", name);
        RLX_TRY(new_node(P, t->p[0] == 'b' ? RLX_JN_BREAK : RLX_JN_CONTINUE, opener, out));
        return end_tag(P);
    }
    if (in_list(t, unsupported))
        return perr(P, t, RLX_ERR_UNSUPPORTED,
                    "unsupported statement '{%% %s %%}' (supported: if, for, set, macro, break, continue, raw)", name);
    if (in_list(t, stray)) {
        char want[128] = "";
        for (size_t i = 0; ends && ends[i]; i++)
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s'%s'", i ? " or " : "", ends[i]);
        if (*want) return perr(P, t, RLX_ERR_BAD_FILE, "unexpected '{%% %s %%}', expected %s", name, want);
        return perr(P, t, RLX_ERR_BAD_FILE, "unexpected '{%% %s %%}' with no open block", name);
    }
    return perr(P, t, RLX_ERR_BAD_FILE, "unknown statement '{%% %s %%}'", name);
}

static rlx_status parse_output(parser *P, rlx_jinja_node **out) {
    const rlx_jinja_token *t = cur(P);
    advance(P);
    rlx_jinja_node *expr = NULL;
    RLX_TRY(parse_tuple(P, false, true, NULL, false, false, &expr));
    RLX_TRY(expect_kind(P, RLX_JT_VAR_END, "'}}'"));
    return node_with(P, RLX_JN_OUTPUT, t, out, 1, expr, NULL, NULL, NULL, NULL);
}

static rlx_status parse_body_items(parser *P, const char *const *ends, const rlx_jinja_token *opener, kids *k) {
    for (;;) {
        const rlx_jinja_token *t = cur(P);
        rlx_jinja_node *n = NULL;
        switch (t->kind) {
        case RLX_JT_TEXT:
            RLX_TRY(new_node(P, RLX_JN_TEXT, t, &n));
            n->value = rlx_jv_str(t->p, t->n);
            advance(P);
            break;
        case RLX_JT_VAR_BEGIN: RLX_TRY(parse_output(P, &n)); break;
        case RLX_JT_BLOCK_BEGIN:
            if (in_list(peek(P, 1), ends)) {
                advance(P);
                return NULL;
            }
            advance(P);
            RLX_TRY(parse_statement(P, t, ends, &n));
            break;
        case RLX_JT_EOF:
            if (ends) {
                /* the last of `ends` is the block's closing tag */
                size_t last = 0;
                while (ends[last + 1]) last++;
                return perr(P, t, RLX_ERR_BAD_FILE,
                            "unexpected end of template: the block opened at %u:%u needs '{%% %s %%}'", opener->line,
                            opener->col, ends[last]);
            }
            return NULL;
        default: return unexpected(P, NULL);
        }
        RLX_TRY(kids_push(k, n));
    }
}

static rlx_status parse_body(parser *P, const char *const *ends, const rlx_jinja_token *opener,
                             rlx_jinja_node **out) {
    kids k = {0};
    rlx_status s = parse_body_items(P, ends, opener, &k);
    if (!s) s = new_node(P, RLX_JN_BODY, opener ? opener : cur(P), out);
    if (s) {
        free(k.v);
        return s;
    }
    return kids_take(P, &k, *out);
}

rlx_status rlx_jinja_parse(const char *src, size_t len, const char *origin, rlx_jinja_arena *a,
                           rlx_jinja_node **root) {
    rlx_jinja_token *toks;
    size_t n;
    RLX_TRY(rlx_jinja_lex(src, len, origin, a, &toks, &n));
    parser P = {.t = toks, .n = n, .origin = origin, .a = a};
    rlx_status s = parse_body(&P, NULL, NULL, root);
    free(toks);
    return s;
}
