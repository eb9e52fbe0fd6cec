/* Lexer for the Jinja subset of chat templates: splits a template into text and tag tokens.
 *
 * Whitespace handling follows jinja2 as Hugging Face transformers configures it for chat
 * templates (ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)):
 *  - `{%-` / `{{-` / `{#-` strip all whitespace before the tag, `-%}` / `-}}` / `-#}` all after;
 *  - trim_blocks: one newline right after `%}` or `#}` is dropped (`+%}` keeps it);
 *  - lstrip_blocks: spaces and tabs from the start of a line up to `{%` or `{#` are dropped
 *    (`{%+` keeps them);
 *  - \r\n and \r become \n, and one trailing newline of the template is dropped
 *    (keep_trailing_newline=False).
 * Facts from jinja2's lexer.py (3.1). */
#ifndef RLX_TEXT_JINJA_LEXER_H
#define RLX_TEXT_JINJA_LEXER_H

#include <stddef.h>
#include <stdint.h>

#include "text/template/jinja_value.h"
#include "rlx/status.h"

typedef enum {
    RLX_JT_TEXT,        /* template data, whitespace control already applied */
    RLX_JT_VAR_BEGIN,   /* {{ */
    RLX_JT_VAR_END,     /* }} */
    RLX_JT_BLOCK_BEGIN, /* {% */
    RLX_JT_BLOCK_END,   /* %} */
    RLX_JT_NAME,
    RLX_JT_STRING,      /* escapes decoded */
    RLX_JT_INT,
    RLX_JT_FLOAT,
    RLX_JT_OP,
    RLX_JT_EOF,
} rlx_jinja_tok_kind;

typedef enum {
    RLX_JOP_ADD, RLX_JOP_SUB, RLX_JOP_MUL, RLX_JOP_DIV, RLX_JOP_FLOORDIV, RLX_JOP_MOD, RLX_JOP_POW,
    RLX_JOP_TILDE, RLX_JOP_EQ, RLX_JOP_NE, RLX_JOP_LT, RLX_JOP_GT, RLX_JOP_LE, RLX_JOP_GE,
    RLX_JOP_ASSIGN, RLX_JOP_LPAREN, RLX_JOP_RPAREN, RLX_JOP_LBRACKET, RLX_JOP_RBRACKET,
    RLX_JOP_LBRACE, RLX_JOP_RBRACE, RLX_JOP_COMMA, RLX_JOP_DOT, RLX_JOP_COLON, RLX_JOP_PIPE,
    RLX_JOP_SEMICOLON,
    /* not produced by the lexer: operators the parser adds */
    RLX_JOP_IN, RLX_JOP_NOT_IN,
} rlx_jinja_op;

typedef struct rlx_jinja_token {
    rlx_jinja_tok_kind kind;
    rlx_jinja_op op;     /* OP */
    uint32_t line, col;  /* 1-based; col counts code points */
    const char *p;       /* TEXT, NAME, STRING: the bytes (borrowed from the arena) */
    size_t n;
    int64_t i;           /* INT */
    double f;            /* FLOAT */
} rlx_jinja_token;

/* Splits src (len bytes, any content) into tokens ending with one EOF token. Token text and the
 * normalised source live in arena `a`; *tokens is malloc'd (caller frees). Errors carry
 * "origin:line:col". */
rlx_status rlx_jinja_lex(const char *src, size_t len, const char *origin, rlx_jinja_arena *a,
                         rlx_jinja_token **tokens, size_t *n_tokens);

/* "origin:line:col: message" with the given code: the form of every template error. */
rlx_status rlx_jinja_error(rlx_code code, const char *origin, uint32_t line, uint32_t col, const char *fmt, ...)
    RLX_PRINTF(5, 6);

const char *rlx_jinja_op_text(rlx_jinja_op op);

#endif
