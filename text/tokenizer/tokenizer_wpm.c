/* WordPiece (GGUF tokenizer model "bert"). Normalization and word splitting follow HF tokenizers'
 * BertNormalizer + BertPreTokenizer (clean_text, handle_chinese_chars, strip_accents = NFD minus
 * nonspacing marks, lowercase; split on whitespace and punctuation); each word is then matched
 * greedily longest-first against the vocabulary, as llama.cpp's llm_tokenizer_wpm does. The GGUF
 * vocabulary marks word-initial pieces with U+2581 instead of BERT's "##" on continuations. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_utf8.h"

/* HF bert.rs is_chinese_char (its 0x2B920 lower bound is kept as written there). */
static bool is_chinese_char(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

static bool is_whitespace(uint32_t cp) {
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_ZS;
}

static bool is_control(uint32_t cp) {
    if (cp == '\t' || cp == '\n' || cp == '\r') return false;
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF;
}

static bool is_punctuation(uint32_t cp) {
    if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
        return true; /* every ASCII non-alphanumeric printable, symbols included */
    switch (utf8proc_category((utf8proc_int32_t)cp)) {
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS: case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF: case UTF8PROC_CATEGORY_PO:
        return true;
    default:
        return false;
    }
}

typedef struct {
    rlx_tok_buf word; /* the word being built, after its U+2581 prefix */
    rlx_tok_ids *out;
} wpm_state;

/* Greedy longest match of "▁word" against the vocabulary; a word with any unmatched position is
 * replaced as a whole by the unknown token. */
static rlx_status flush_word(const rlx_tokenizer *t, wpm_state *st) {
    if (st->word.len <= 3) return NULL; /* only the U+2581 prefix */
    const char *w = st->word.p;
    size_t n = st->word.len, start = st->out->n;
    for (size_t i = 0; i < n;) {
        size_t j = n - i > (size_t)t->vocab.max_len ? i + t->vocab.max_len : n;
        int32_t id = RLX_TOKEN_NULL;
        for (; j > i; j--)
            if ((id = rlx_tok_vocab_find(&t->vocab, w + i, j - i)) >= 0) break;
        if (id < 0) {
            st->out->n = start;
            break;
        }
        RLX_TRY(rlx_tok_ids_push(st->out, id));
        i = j;
    }
    if (st->out->n == start && t->special[RLX_SPECIAL_UNK] >= 0)
        RLX_TRY(rlx_tok_ids_push(st->out, t->special[RLX_SPECIAL_UNK]));
    st->word.len = 3;
    return NULL;
}

static rlx_status add_char(const rlx_tokenizer *t, wpm_state *st, uint32_t cp) {
    if (is_whitespace(cp)) return flush_word(t, st);
    if (cp == 0 || cp == 0xFFFD || is_control(cp)) return NULL;
    if (t->wpm_strip_accents && utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_MN) return NULL;
    if (t->wpm_lowercase) cp = (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp);
    char u[4];
    size_t k = rlx_utf8_put(cp, u);
    if (is_punctuation(cp) || is_chinese_char(cp)) {
        RLX_TRY(flush_word(t, st));
        RLX_TRY(rlx_tok_buf_append(&st->word, u, k));
        return flush_word(t, st);
    }
    return rlx_tok_buf_append(&st->word, u, k);
}

rlx_status rlx_tok_wpm_encode(const rlx_tokenizer *t, const char *text, size_t len, rlx_tok_ids *out) {
    wpm_state st = {{0}, out};
    rlx_status s = rlx_tok_buf_append(&st.word, "\xE2\x96\x81", 3);
    for (size_t i = 0; !s && i < len;) {
        uint32_t cp;
        size_t k = rlx_utf8_next(text + i, len - i, &cp);
        if (!k) { /* cannot happen on sanitized text; treat as U+FFFD (dropped) */
            i++;
            continue;
        }
        i += k;
        if (!t->wpm_strip_accents) {
            s = add_char(t, &st, cp);
            continue;
        }
        utf8proc_int32_t dec[32];
        int last = 0;
        utf8proc_ssize_t nd = utf8proc_decompose_char((utf8proc_int32_t)cp, dec, 32, UTF8PROC_DECOMPOSE, &last);
        if (nd < 0 || nd > 32) {
            s = add_char(t, &st, cp);
            continue;
        }
        for (utf8proc_ssize_t d = 0; !s && d < nd; d++) s = add_char(t, &st, (uint32_t)dec[d]);
    }
    if (!s) s = flush_word(t, &st);
    rlx_tok_buf_free(&st.word);
    return s;
}
