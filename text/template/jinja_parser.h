/* Parser for the Jinja subset of chat templates: tokens (text/template/jinja_lexer.h) to a tree.
 *
 * The grammar and operator precedence are jinja2's (parser.py, 3.1): conditional expressions
 * bind loosest, then or, and, not, comparisons (==, !=, <, >, <=, >=, in, not in), + and -, ~,
 * * / // %, **, unary - and +, and tightest the postfix forms (.attr, [index], [a:b:c], calls)
 * followed by filters (| name(args)) and tests (is [not] name(args)). So `a + b | trim` is
 * a + (b | trim), and `not x is defined` is not (x is defined).
 *
 * Statements: if/elif/else, for (with `if` filter, tuple targets and else), set (names, tuples,
 * namespace attributes, and the block form), macro, break, continue, raw. Filters and tests are
 * resolved here, so an unknown one fails at load time with its line and column. */
#ifndef RLX_TEXT_JINJA_PARSER_H
#define RLX_TEXT_JINJA_PARSER_H

#include <stddef.h>
#include <stdint.h>

#include "text/template/jinja_lexer.h"
#include "text/template/jinja_value.h"
#include "rlx/status.h"

typedef enum {
    /* expressions */
    RLX_JN_CONST,   /* value */
    RLX_JN_NAME,    /* name */
    RLX_JN_LIST,    /* kids: items */
    RLX_JN_TUPLE,   /* kids: items */
    RLX_JN_DICT,    /* kids: key0, value0, key1, value1, ... */
    RLX_JN_ATTR,    /* kids[0].name */
    RLX_JN_ITEM,    /* kids[0][kids[1]] */
    RLX_JN_SLICE,   /* kids: start, stop, step (each may be NULL) */
    RLX_JN_CALL,    /* kids[0](kids[1..]); keyword arguments are KWARG kids */
    RLX_JN_KWARG,   /* name=kids[0] */
    RLX_JN_FILTER,  /* kids[0] | name(kids[1..]); id: the filter */
    RLX_JN_TEST,    /* kids[0] is [not] name(kids[1..]); id: the test, negated */
    RLX_JN_NOT,     /* not kids[0] */
    RLX_JN_NEG,     /* -kids[0] */
    RLX_JN_POS,     /* +kids[0] */
    RLX_JN_AND,     /* kids[0] and kids[1] */
    RLX_JN_OR,      /* kids[0] or kids[1] */
    RLX_JN_BINOP,   /* kids[0] op kids[1]: + - * / // % ** */
    RLX_JN_CONCAT,  /* kids joined with ~ */
    RLX_JN_COMPARE, /* kids[0] ops[0] kids[1] ops[1] kids[2] ... (Python chaining) */
    RLX_JN_COND,    /* kids[0] if kids[1] else kids[2] (kids[2] may be NULL) */
    /* statements */
    RLX_JN_BODY,     /* kids: statements */
    RLX_JN_TEXT,     /* value: a string */
    RLX_JN_OUTPUT,   /* {{ kids[0] }} */
    RLX_JN_IF,       /* kids: cond0, body0, cond1, body1, ...; a NULL cond is the else branch */
    RLX_JN_FOR,      /* kids: target, iterable, filter (or NULL), body, else body (or NULL) */
    RLX_JN_SET,      /* kids: target (NAME, TUPLE of NAMEs, or ATTR of a NAME), value */
    RLX_JN_SET_BLOCK,/* kids: target NAME, body */
    RLX_JN_MACRO,    /* name; kids: PARAM..., body (last) */
    RLX_JN_PARAM,    /* name; kids[0]: default value or NULL */
    RLX_JN_BREAK,
    RLX_JN_CONTINUE,
} rlx_jinja_node_kind;

typedef struct rlx_jinja_node rlx_jinja_node;
struct rlx_jinja_node {
    rlx_jinja_node_kind kind;
    uint32_t line, col;
    rlx_jinja_op op;        /* BINOP */
    rlx_jinja_op *ops;      /* COMPARE: n_kids - 1 operators (arena) */
    int id;                 /* FILTER / TEST: index in the builtin tables */
    bool negated;           /* TEST */
    const char *name;       /* NUL-terminated (arena): NAME, ATTR, KWARG, FILTER, TEST, MACRO, PARAM */
    rlx_jv value;           /* CONST, TEXT */
    rlx_jinja_node **kids;  /* arena, n_kids entries (some may be NULL, as listed above) */
    size_t n_kids;
};

/* Parses a template; every node lives in arena `a`. Errors carry "origin:line:col":
 * RLX_ERR_BAD_FILE for syntax errors, RLX_ERR_UNSUPPORTED for valid Jinja this subset lacks. */
rlx_status rlx_jinja_parse(const char *src, size_t len, const char *origin, rlx_jinja_arena *a,
                           rlx_jinja_node **root);

#endif
