/* The one UTF-8 encoder of the text layer (rlx_utf8_put), used by the tokenizers and the template
 * lexer. Expected bytes follow from the Unicode standard, section 3.9 (Table 3-6, the bit layout of
 * each length, and Table 3-7, the well-formed sequences): surrogates U+D800..U+DFFF and values past
 * U+10FFFF have no UTF-8 form and are written as U+FFFD (EF BF BD). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/chat_template.h"
#include "test_util.h"
#include "text/tokenizer/tokenizer_utf8.h"

typedef struct {
    uint32_t cp;
    size_t len;
    const char *bytes;
} utf8_case;

static const utf8_case cases[] = {
    {0x0000, 1, "\x00"},
    {0x007F, 1, "\x7F"},             /* last 1-byte value */
    {0x0080, 2, "\xC2\x80"},         /* first 2-byte value */
    {0x07FF, 2, "\xDF\xBF"},         /* last 2-byte value */
    {0x0800, 3, "\xE0\xA0\x80"},     /* first 3-byte value */
    {0xD7FF, 3, "\xED\x9F\xBF"},     /* last value below the surrogates */
    {0xD800, 3, "\xEF\xBF\xBD"},     /* first surrogate: U+FFFD */
    {0xDBFF, 3, "\xEF\xBF\xBD"},     /* last high surrogate */
    {0xDC00, 3, "\xEF\xBF\xBD"},     /* first low surrogate */
    {0xDFFF, 3, "\xEF\xBF\xBD"},     /* last surrogate */
    {0xE000, 3, "\xEE\x80\x80"},     /* first value above the surrogates */
    {0xFFFD, 3, "\xEF\xBF\xBD"},     /* the replacement character itself */
    {0xFFFF, 3, "\xEF\xBF\xBF"},     /* last 3-byte value */
    {0x10000, 4, "\xF0\x90\x80\x80"}, /* first 4-byte value */
    {0x10FFFF, 4, "\xF4\x8F\xBF\xBF"}, /* last code point */
    {0x110000, 3, "\xEF\xBF\xBD"},   /* past the code space: U+FFFD */
    {0xFFFFFFFF, 3, "\xEF\xBF\xBD"},
};

static void encode_cases(void) {
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const utf8_case *c = &cases[i];
        char out[4] = {0};
        size_t len = rlx_utf8_put(c->cp, out);
        T_CHECK(len == c->len && !memcmp(out, c->bytes, c->len), "U+%04X: got %zu bytes %02X %02X %02X %02X, want %zu",
                (unsigned)c->cp, len, (uint8_t)out[0], (uint8_t)out[1], (uint8_t)out[2], (uint8_t)out[3], c->len);
        /* every well-formed result decodes back to the value written */
        uint32_t back = 0;
        size_t n = rlx_utf8_next(out, len, &back);
        uint32_t want = (c->cp >= 0xD800 && c->cp <= 0xDFFF) || c->cp > 0x10FFFF ? 0xFFFD : c->cp;
        T_CHECK(n == len && back == want, "U+%04X: decodes to U+%04X (%zu bytes)", (unsigned)c->cp, (unsigned)back, n);
    }
}

/* A template's \u escape goes through the same encoder: a lone surrogate becomes U+FFFD. */
static void template_escapes(void) {
    static const struct {
        const char *tpl, *want;
    } t[] = {
        {"{{ '\\u00e9' }}", "\xC3\xA9"},
        {"{{ '\\ud800' }}", "\xEF\xBF\xBD"},
        {"{{ '\\U0010ffff' }}", "\xF4\x8F\xBF\xBF"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        rlx_chat_template *ct = NULL;
        char *out = NULL;
        if (T_OK(rlx_chat_template_parse(t[i].tpl, strlen(t[i].tpl), "utf8", &ct)))
            T_OK(rlx_chat_template_render(ct, NULL, 0, NULL, &out, NULL));
        T_CHECK(out && !strcmp(out, t[i].want), "template %s renders [%s]", t[i].tpl, out ? out : "(error)");
        free(out);
        rlx_chat_template_destroy(ct);
    }
}

int main(void) {
    encode_cases();
    template_escapes();
    return t_summary("test_text_utf8");
}
