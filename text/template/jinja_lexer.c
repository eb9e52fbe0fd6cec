/* Template lexer. See text/template/jinja_lexer.h for the whitespace rules it applies. */
#include "text/template/jinja_lexer.h"
#include "text/tokenizer/tokenizer_utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BRACKET_DEPTH 256

typedef struct lexer {
    const char *src; /* normalised copy of the template, in the arena */
    size_t len;
    const char *origin;
    rlx_jinja_arena *a;
    rlx_jinja_token *toks; /* owned until handed to the caller */
    size_t n, cap;
    size_t cur_off;        /* line/column cursor: position cur_off is at cur_line:cur_col */
    uint32_t cur_line, cur_col;
} lexer;

rlx_status rlx_jinja_error(rlx_code code, const char *origin, uint32_t line, uint32_t col, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rlx_errorf(code, "%s:%u:%u: %s", origin, line, col, msg);
}

const char *rlx_jinja_op_text(rlx_jinja_op op) {
    static const char *const text[] = {
        [RLX_JOP_ADD] = "+", [RLX_JOP_SUB] = "-", [RLX_JOP_MUL] = "*", [RLX_JOP_DIV] = "/",
        [RLX_JOP_FLOORDIV] = "//", [RLX_JOP_MOD] = "%", [RLX_JOP_POW] = "**", [RLX_JOP_TILDE] = "~",
        [RLX_JOP_EQ] = "==", [RLX_JOP_NE] = "!=", [RLX_JOP_LT] = "<", [RLX_JOP_GT] = ">",
        [RLX_JOP_LE] = "<=", [RLX_JOP_GE] = ">=", [RLX_JOP_ASSIGN] = "=", [RLX_JOP_LPAREN] = "(",
        [RLX_JOP_RPAREN] = ")", [RLX_JOP_LBRACKET] = "[", [RLX_JOP_RBRACKET] = "]", [RLX_JOP_LBRACE] = "{",
        [RLX_JOP_RBRACE] = "}", [RLX_JOP_COMMA] = ",", [RLX_JOP_DOT] = ".", [RLX_JOP_COLON] = ":",
        [RLX_JOP_PIPE] = "|", [RLX_JOP_SEMICOLON] = ";", [RLX_JOP_IN] = "in", [RLX_JOP_NOT_IN] = "not in",
    };
    return (size_t)op < sizeof text / sizeof text[0] && text[op] ? text[op] : "?";
}

static void linecol(lexer *lx, size_t off, uint32_t *line, uint32_t *col) {
    if (off < lx->cur_off) lx->cur_off = 0, lx->cur_line = 1, lx->cur_col = 1;
    for (size_t i = lx->cur_off; i < off && i < lx->len; i++) {
        unsigned char c = (unsigned char)lx->src[i];
        if (c == '\n') lx->cur_line++, lx->cur_col = 1;
        else if ((c & 0xC0) != 0x80) lx->cur_col++;
    }
    lx->cur_off = off;
    *line = lx->cur_line;
    *col = lx->cur_col;
}

static rlx_status lex_error(lexer *lx, size_t off, const char *fmt, ...) RLX_PRINTF(3, 4);
static rlx_status lex_error(lexer *lx, size_t off, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    uint32_t line, col;
    linecol(lx, off, &line, &col);
    return rlx_jinja_error(RLX_ERR_BAD_FILE, lx->origin, line, col, "%s", msg);
}

static rlx_status oom(void) { return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "chat template: out of memory while lexing"); }

static rlx_status push(lexer *lx, rlx_jinja_tok_kind kind, size_t off, rlx_jinja_token **out) {
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        rlx_jinja_token *t = realloc(lx->toks, cap * sizeof *t);
        if (!t) return oom();
        lx->toks = t;
        lx->cap = cap;
    }
    rlx_jinja_token *t = &lx->toks[lx->n++];
    *t = (rlx_jinja_token){.kind = kind};
    linecol(lx, off, &t->line, &t->col);
    if (out) *out = t;
    return NULL;
}

/* Python's \s: one whitespace code point at p, its length in *len (0 when p is not whitespace). */
static size_t space_len(const char *p, size_t n) {
    size_t len;
    return n && rlx_jv_is_space(rlx_jv_utf8_decode(p, n, &len)) ? len : 0;
}

static size_t skip_space(const lexer *lx, size_t p) {
    size_t k;
    while (p < lx->len && (k = space_len(lx->src + p, lx->len - p))) p += k;
    return p;
}

/* The start of the trailing whitespace of src[start, end). */
static size_t rstrip(const lexer *lx, size_t start, size_t end) {
    size_t keep = start;
    for (size_t p = start; p < end;) {
        size_t k = space_len(lx->src + p, end - p);
        if (k) {
            p += k;
        } else {
            size_t len;
            rlx_jv_utf8_decode(lx->src + p, end - p, &len);
            p += len;
            keep = p;
        }
    }
    return keep;
}

/* lstrip_blocks: when only whitespace lies between the last line start and the tag, drop it. */
static size_t lstrip_line(const lexer *lx, size_t start, size_t end, bool line_starting) {
    size_t l = end;
    while (l > start && lx->src[l - 1] != '\n') l--;
    if (l == start && !line_starting) return end;
    if (l == end) return end;
    return rstrip(lx, l, end) == l ? l : end;
}

static rlx_status emit_text(lexer *lx, size_t start, size_t end) {
    if (end <= start) return NULL;
    rlx_jinja_token *t;
    RLX_TRY(push(lx, RLX_JT_TEXT, start, &t));
    t->p = lx->src + start;
    t->n = end - start;
    return NULL;
}

static bool starts(const lexer *lx, size_t p, const char *s) {
    size_t n = strlen(s);
    return p <= lx->len && lx->len - p >= n && memcmp(lx->src + p, s, n) == 0;
}

static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident(char c) { return is_ident_start(c) || is_digit(c); }

/* After a block or comment end marker: `-` strips all whitespace, `+` nothing, else trim_blocks. */
static size_t after_end(const lexer *lx, size_t p, char sign) {
    if (sign == '-') return skip_space(lx, p);
    if (sign == '+') return p;
    return p < lx->len && lx->src[p] == '\n' ? p + 1 : p;
}

/* ` word [-+]?%}` at p (after `{%` and its sign): *end_sign and *after describe the tag's end. */
static bool match_keyword_tag(const lexer *lx, size_t p, const char *word, char *end_sign, size_t *after) {
    p = skip_space(lx, p);
    size_t n = strlen(word);
    if (!starts(lx, p, word) || (p + n < lx->len && is_ident(lx->src[p + n]))) return false;
    p = skip_space(lx, p + n);
    if (starts(lx, p, "-%}")) *end_sign = '-', *after = p + 3;
    else if (starts(lx, p, "+%}")) *end_sign = '+', *after = p + 3;
    else if (starts(lx, p, "%}")) *end_sign = 0, *after = p + 2;
    else return false;
    return true;
}

static size_t find_tag(const lexer *lx, size_t p) {
    for (; p + 1 < lx->len; p++) {
        if (lx->src[p] != '{') continue;
        char c = lx->src[p + 1];
        if (c == '{' || c == '%' || c == '#') return p;
    }
    return lx->len;
}

/* Emits the text before a tag, with `-` or lstrip_blocks applied. */
static rlx_status text_before_tag(lexer *lx, size_t start, size_t tag, char kind, char sign, bool line_starting) {
    size_t end = tag;
    if (sign == '-') end = rstrip(lx, start, tag);
    else if (kind != '{' && sign != '+') end = lstrip_line(lx, start, tag, line_starting);
    return emit_text(lx, start, end);
}

static rlx_status lex_raw(lexer *lx, size_t tag, size_t body, size_t *pos) {
    for (size_t p = body;; p++) {
        p = find_tag(lx, p);
        if (p >= lx->len) return lex_error(lx, tag, "unterminated raw block: '{%% raw %%}' has no '{%% endraw %%}'");
        if (lx->src[p + 1] != '%') continue;
        size_t q = p + 2;
        char sign = 0, end_sign;
        if (q < lx->len && (lx->src[q] == '-' || lx->src[q] == '+')) sign = lx->src[q++];
        size_t after;
        if (!match_keyword_tag(lx, q, "endraw", &end_sign, &after)) continue;
        bool line_starting = body > 0 && lx->src[body - 1] == '\n';
        RLX_TRY(text_before_tag(lx, body, p, '%', sign, line_starting));
        *pos = after_end(lx, after, end_sign);
        return NULL;
    }
}

static rlx_status lex_comment(lexer *lx, size_t tag, size_t body, size_t *pos) {
    for (size_t p = body;; p++) {
        if (p + 1 >= lx->len) return lex_error(lx, tag, "unterminated comment: '{#' has no matching '#}'");
        if (lx->src[p] != '#' || lx->src[p + 1] != '}') continue;
        char sign = p > body && (lx->src[p - 1] == '-' || lx->src[p - 1] == '+') ? lx->src[p - 1] : 0;
        *pos = after_end(lx, p + 2, sign);
        return NULL;
    }
}

static rlx_status lex_number(lexer *lx, size_t *pp) {
    size_t p = *pp, start = p;
    char digits[64];
    size_t nd = 0;
    bool is_float = false;
    /* jinja2's float_re refuses a float right after '.', so `x.0.1` is x . 0 . 1 */
    bool may_float = !(start > 0 && lx->src[start - 1] == '.');
    for (; p < lx->len && (is_digit(lx->src[p]) || lx->src[p] == '_'); p++)
        if (lx->src[p] != '_' && nd < sizeof digits - 1) digits[nd++] = lx->src[p];
    if (may_float && p + 1 < lx->len && lx->src[p] == '.' && is_digit(lx->src[p + 1])) {
        is_float = true;
        digits[nd++] = '.';
        for (p++; p < lx->len && (is_digit(lx->src[p]) || lx->src[p] == '_'); p++)
            if (lx->src[p] != '_' && nd < sizeof digits - 1) digits[nd++] = lx->src[p];
    }
    if (may_float && p < lx->len && (lx->src[p] == 'e' || lx->src[p] == 'E')) {
        size_t q = p + 1;
        if (q < lx->len && (lx->src[q] == '+' || lx->src[q] == '-')) q++;
        if (q < lx->len && is_digit(lx->src[q])) {
            is_float = true;
            for (; p < q && nd < sizeof digits - 1; p++) digits[nd++] = lx->src[p];
            for (; p < lx->len && (is_digit(lx->src[p]) || lx->src[p] == '_'); p++)
                if (lx->src[p] != '_' && nd < sizeof digits - 1) digits[nd++] = lx->src[p];
        }
    }
    if (nd >= sizeof digits - 1) return lex_error(lx, start, "number literal longer than %zu digits", sizeof digits - 2);
    digits[nd] = 0;
    rlx_jinja_token *t;
    RLX_TRY(push(lx, is_float ? RLX_JT_FLOAT : RLX_JT_INT, start, &t));
    if (is_float) {
        t->f = strtod(digits, NULL);
    } else {
        int64_t v = 0;
        for (size_t i = 0; i < nd; i++)
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, digits[i] - '0', &v))
                return lex_error(lx, start, "integer literal %s does not fit in 64 bits", digits);
        t->i = v;
    }
    *pp = p;
    return NULL;
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decodes Python string escapes (jinja2 runs literals through "unicode-escape"); *cp gets the code
 * point of a numeric escape, or UINT32_MAX when the escape is a plain byte sequence in *lit. */
static rlx_status unescape_one(lexer *lx, size_t at, const char *s, size_t n, size_t *used, uint32_t *cp,
                               const char **lit, size_t *lit_n) {
    static const char simple_from[] = "\\'\"abfnrtv", simple_to[] = "\\'\"\a\b\f\n\r\t\v";
    char c = s[1];
    *cp = UINT32_MAX;
    *used = 2;
    const char *hit = n > 1 ? strchr(simple_from, c) : NULL;
    if (hit && c) {
        *lit = &simple_to[hit - simple_from];
        *lit_n = 1;
        return NULL;
    }
    if (c == '\n') {
        *lit_n = 0;
        return NULL;
    }
    if (c >= '0' && c <= '7') {
        uint32_t v = 0;
        size_t k = 1;
        while (k < 4 && k < n && s[k] >= '0' && s[k] <= '7') v = v * 8 + (uint32_t)(s[k++] - '0');
        *cp = v;
        *used = k;
        return NULL;
    }
    int width = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
    if (width) {
        uint32_t v = 0;
        for (int k = 0; k < width; k++) {
            int h = 2 + (size_t)k < n ? hex_value(s[2 + k]) : -1;
            if (h < 0) return lex_error(lx, at, "truncated \\%c escape: expected %d hex digits", c, width);
            v = v * 16 + (uint32_t)h;
        }
        if (v > 0x10FFFF) return lex_error(lx, at, "\\U escape out of the Unicode range");
        *cp = v;
        *used = 2 + (size_t)width;
        return NULL;
    }
    if (c == 'N') return lex_error(lx, at, "named Unicode escapes (\\N{...}) are not supported in chat templates");
    *lit = s; /* unknown escape: Python keeps the backslash */
    *lit_n = 2;
    return NULL;
}

static rlx_status lex_string(lexer *lx, size_t *pp) {
    size_t start = *pp, p = start + 1;
    char q = lx->src[start];
    while (p < lx->len && lx->src[p] != q) p += lx->src[p] == '\\' && p + 1 < lx->len ? 2 : 1;
    if (p >= lx->len) return lex_error(lx, start, "unterminated string literal");
    /* the decoded text is never longer than the literal */
    char *out = rlx_jinja_alloc(lx->a, p - start);
    if (!out) return oom();
    size_t o = 0;
    for (size_t i = start + 1; i < p;) {
        if (lx->src[i] != '\\') {
            out[o++] = lx->src[i++];
            continue;
        }
        size_t used, lit_n = 0;
        uint32_t cp;
        const char *lit = NULL;
        RLX_TRY(unescape_one(lx, i, lx->src + i, p - i, &used, &cp, &lit, &lit_n));
        if (cp != UINT32_MAX) {
            o += rlx_utf8_put(cp, out + o);
        } else if (lit_n) {
            memcpy(out + o, lit, lit_n);
            o += lit_n;
        }
        i += used;
    }
    rlx_jinja_token *t;
    RLX_TRY(push(lx, RLX_JT_STRING, start, &t));
    t->p = out;
    t->n = o;
    *pp = p + 1;
    return NULL;
}

static bool match_op(const char *s, size_t n, rlx_jinja_op *op, size_t *len) {
    static const struct {
        const char *text;
        rlx_jinja_op op;
    } ops[] = {
        {"//", RLX_JOP_FLOORDIV}, {"**", RLX_JOP_POW}, {"==", RLX_JOP_EQ}, {"!=", RLX_JOP_NE},
        {"<=", RLX_JOP_LE}, {">=", RLX_JOP_GE}, {"+", RLX_JOP_ADD}, {"-", RLX_JOP_SUB},
        {"*", RLX_JOP_MUL}, {"/", RLX_JOP_DIV}, {"%", RLX_JOP_MOD}, {"~", RLX_JOP_TILDE},
        {"<", RLX_JOP_LT}, {">", RLX_JOP_GT}, {"=", RLX_JOP_ASSIGN}, {"(", RLX_JOP_LPAREN},
        {")", RLX_JOP_RPAREN}, {"[", RLX_JOP_LBRACKET}, {"]", RLX_JOP_RBRACKET}, {"{", RLX_JOP_LBRACE},
        {"}", RLX_JOP_RBRACE}, {",", RLX_JOP_COMMA}, {".", RLX_JOP_DOT}, {":", RLX_JOP_COLON},
        {"|", RLX_JOP_PIPE}, {";", RLX_JOP_SEMICOLON},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        size_t k = strlen(ops[i].text);
        if (k <= n && memcmp(s, ops[i].text, k) == 0) {
            *op = ops[i].op;
            *len = k;
            return true;
        }
    }
    return false;
}

/* Brackets must balance inside a tag; the tag's end is only recognised when they do (jinja2 lets
 * `{{ {'a': 1}}}` close its dict before the tag). */
static rlx_status balance(lexer *lx, size_t at, rlx_jinja_op op, char *stack, size_t *depth) {
    char open = op == RLX_JOP_LPAREN ? '(' : op == RLX_JOP_LBRACKET ? '[' : op == RLX_JOP_LBRACE ? '{' : 0;
    char close = op == RLX_JOP_RPAREN ? '(' : op == RLX_JOP_RBRACKET ? '[' : op == RLX_JOP_RBRACE ? '{' : 0;
    if (open) {
        if (*depth == MAX_BRACKET_DEPTH)
            return lex_error(lx, at, "brackets nest deeper than %d levels", MAX_BRACKET_DEPTH);
        stack[(*depth)++] = open;
    } else if (close) {
        if (*depth == 0) return lex_error(lx, at, "unexpected '%s'", rlx_jinja_op_text(op));
        if (stack[*depth - 1] != close) {
            char want = stack[*depth - 1] == '(' ? ')' : stack[*depth - 1] == '[' ? ']' : '}';
            return lex_error(lx, at, "unexpected '%s', expected '%c'", rlx_jinja_op_text(op), want);
        }
        (*depth)--;
    }
    return NULL;
}

/* The end of the tag at p when brackets are balanced: returns its length (0: not an end). */
static size_t tag_end_at(const lexer *lx, size_t p, bool block, char *sign) {
    *sign = 0;
    if (block) {
        if (starts(lx, p, "-%}") || starts(lx, p, "+%}")) return *sign = lx->src[p], 3;
        return starts(lx, p, "%}") ? 2 : 0;
    }
    if (starts(lx, p, "-}}")) return *sign = '-', 3;
    return starts(lx, p, "}}") ? 2 : 0;
}

static rlx_status lex_tag(lexer *lx, size_t tag, size_t p, bool block, size_t *pos) {
    char stack[MAX_BRACKET_DEPTH];
    size_t depth = 0;
    RLX_TRY(push(lx, block ? RLX_JT_BLOCK_BEGIN : RLX_JT_VAR_BEGIN, tag, NULL));
    for (;;) {
        while (p < lx->len && strchr(" \t\n\r\f\v", lx->src[p]) && lx->src[p]) p++;
        if (p >= lx->len)
            return lex_error(lx, tag, "unterminated tag: '%s' has no matching '%s'", block ? "{%" : "{{",
                             block ? "%}" : "}}");
        char sign;
        size_t end_len = depth == 0 ? tag_end_at(lx, p, block, &sign) : 0;
        if (end_len) {
            RLX_TRY(push(lx, block ? RLX_JT_BLOCK_END : RLX_JT_VAR_END, p, NULL));
            *pos = block ? after_end(lx, p + end_len, sign)
                         : sign == '-' ? skip_space(lx, p + end_len) : p + end_len;
            return NULL;
        }
        char c = lx->src[p];
        rlx_jinja_op op;
        size_t len;
        if (is_digit(c)) {
            RLX_TRY(lex_number(lx, &p));
        } else if (is_ident_start(c)) {
            size_t start = p;
            while (p < lx->len && is_ident(lx->src[p])) p++;
            rlx_jinja_token *t;
            RLX_TRY(push(lx, RLX_JT_NAME, start, &t));
            t->p = lx->src + start;
            t->n = p - start;
        } else if (c == '\'' || c == '"') {
            RLX_TRY(lex_string(lx, &p));
        } else if (match_op(lx->src + p, lx->len - p, &op, &len)) {
            RLX_TRY(balance(lx, p, op, stack, &depth));
            rlx_jinja_token *t;
            RLX_TRY(push(lx, RLX_JT_OP, p, &t));
            t->op = op;
            p += len;
        } else if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) {
            return lex_error(lx, p, "unexpected byte 0x%02x inside a tag", (unsigned char)c);
        } else {
            return lex_error(lx, p, "unexpected character '%c' inside a tag", c);
        }
    }
}

/* \r\n and \r become \n; one trailing newline goes (jinja2's keep_trailing_newline=False). */
static rlx_status normalise(lexer *lx, const char *src, size_t len) {
    char *out = rlx_jinja_alloc(lx->a, len + 1);
    if (!out) return oom();
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            out[o++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else {
            out[o++] = src[i];
        }
    }
    if (o && out[o - 1] == '\n') o--;
    out[o] = 0;
    lx->src = out;
    lx->len = o;
    return NULL;
}

static rlx_status lex_all(lexer *lx) {
    size_t pos = 0;
    bool line_starting = true; /* jinja2: did the last thing consumed end with a newline? */
    while (pos < lx->len) {
        size_t tag = find_tag(lx, pos);
        if (tag >= lx->len) {
            RLX_TRY(emit_text(lx, pos, lx->len));
            break;
        }
        char kind = lx->src[tag + 1];
        size_t p = tag + 2;
        char sign = 0;
        if (p < lx->len && (lx->src[p] == '-' || lx->src[p] == '+')) sign = lx->src[p++];
        char raw_sign;
        size_t raw_body;
        if (kind == '%' && match_keyword_tag(lx, p, "raw", &raw_sign, &raw_body)) {
            RLX_TRY(text_before_tag(lx, pos, tag, kind, sign, line_starting));
            /* jinja2: `{% raw %}` takes no trim_blocks newline, `{% raw -%}` strips whitespace */
            if (raw_sign == '-') raw_body = skip_space(lx, raw_body);
            RLX_TRY(lex_raw(lx, tag, raw_body, &pos));
        } else {
            RLX_TRY(text_before_tag(lx, pos, tag, kind, sign, line_starting));
            if (kind == '#') RLX_TRY(lex_comment(lx, tag, p, &pos));
            else RLX_TRY(lex_tag(lx, tag, p, kind == '%', &pos));
        }
        line_starting = pos > 0 && lx->src[pos - 1] == '\n';
    }
    return push(lx, RLX_JT_EOF, lx->len, NULL);
}

rlx_status rlx_jinja_lex(const char *src, size_t len, const char *origin, rlx_jinja_arena *a,
                         rlx_jinja_token **tokens, size_t *n_tokens) {
    lexer lx = {.origin = origin, .a = a, .cur_line = 1, .cur_col = 1};
    rlx_status s = normalise(&lx, src, len);
    if (!s) s = lex_all(&lx);
    if (s) {
        free(lx.toks);
        return s;
    }
    *tokens = lx.toks;
    *n_tokens = lx.n;
    return NULL;
}
