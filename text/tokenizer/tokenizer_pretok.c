/* Pre-tokenizers: the regex lists that cut text into words before BPE, and GPT-2's byte-level
 * encoding of those words.
 *
 * The named lists are llama.cpp's (src/llama-vocab.cpp, llm_tokenizer_bpe, one per
 * LLAMA_VOCAB_PRE_TYPE), which in turn transcribe each model's tokenizer.json. Where llama.cpp
 * rewrote a pattern for std::regex's lack of \p{Lu} etc. (tekken, gpt-4o), the original
 * tokenizer.json pattern is used: PCRE2 supports it directly. Each regex splits every current piece
 * into matches and the gaps between them (HF Split, behavior "Isolated"). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <inttypes.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_utf8.h"

/* (?:'[sS]|...) is llama.cpp's spelling of HF's (?i:'s|'t|'re|'ve|'m|'ll|'d). */
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define RE_LLAMA3                                                                                  \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN2                                                                                   \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_QWEN35                                                                                  \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"    \
                 "\\s+(?!\\S)|\\s+"
#define RE_SEED_CODER                                                                              \
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define RE_BAILING                                                                                 \
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"  \
    "\\s*[\\r\\n]|\\s+(?!\\S)|\\s+"
/* Upper-then-lower word shapes (Mistral tekken, GPT-4o o200k), as in their tokenizer.json. */
#define RE_UPPER_LOWER(contr, digits)                                                              \
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+" contr                  \
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*" contr               \
    "|" digits "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
/* CJK ideographs 4E00-9FA5, 0800-4E00, Hangul AC00-D7FF (deepseek's tokenizer.json). */
#define RE_DEEPSEEK_CJK "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"
/* Cased letters of deepseek-llm's tokenizer.json, as code points. */
#define RE_DEEPSEEK_LETTERS \
    "\\s?[\\x{41}-\\x{5A}\\x{61}-\\x{7A}\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}" \
    "\\x{1BC}-\\x{1BF}\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}" \
    "\\x{37B}-\\x{37D}\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-" \
    "\\x{3F5}\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-" \
    "\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}" \
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}\\x{1F20}-" \
    "\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}\\x{1F5F}-" \
    "\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}\\x{1FC6}-" \
    "\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}" \
    "\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}" \
    "\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-" \
    "\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-" \
    "\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}" \
    "\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-" \
    "\\x{FB06}\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}" \
    "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}" \
    "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+"
#define RE_DEEPSEEK_PUNCT "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+"
#define RE_DEEPSEEK3                                                                               \
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+|"         \
    " ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
/* Words up to a space or sentence punctuation (… 。 ， 、 । ۔ ،), for poro/bloom/viking. */
#define RE_PORO " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{0964}\\x{06D4}\\x{060C})]+"

typedef struct {
    const char *names;           /* space-separated GGUF tokenizer.ggml.pre values */
    const char *regex[RLX_TOK_MAX_REGEX];
    bool ignore_merges;
    bool add_bos;
} pretok_def;

static const pretok_def PRETOKS[] = {
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]"}, false, false},
    {"llama3 llama-v3 llama-bpe falcon3 falcon-h1 pixtral midm-2.0 lfm2", {RE_LLAMA3}, true, true},
    {"dbrx smaug-bpe", {RE_LLAMA3}, false, false},
    {"deepseek-llm",
     {"[\r\n]", RE_DEEPSEEK_LETTERS, RE_DEEPSEEK_PUNCT, "\\s+$", RE_DEEPSEEK_CJK, "\\p{N}+"}, false, false},
    {"deepseek-coder", {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_DEEPSEEK_CJK, "\\p{N}"}, false, false},
    {"deepseek-v3 hunyuan-dense",
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+", RE_DEEPSEEK3}, false, false},
    {"falcon", {"[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]"}, false, false},
    {"starcoder refact command-r smollm codeshell exaone minerva-7b mellum2", {"\\p{N}", RE_GPT2}, false, false},
    {"gpt-2 phi-2 jina-es jina-de gigachat jina-v2-es jina-v2-de a.x-4.0 mellum modern-bert exaone4 mpt olmo "
     "jais trillion granite-docling",
     {RE_GPT2}, false, false},
    {"qwen2 deepseek-r1-qwen kormo f2llmv2 megrez stablelm2 hunyuan solar-open grok-2", {RE_QWEN2}, false, false},
    {"qwen35", {RE_QWEN35}, false, false},
    {"poro-chat bloom gpt3-finnish", {RE_PORO}, false, false},
    {"viking", {RE_PORO, "\\p{N}"}, false, false},
    {"tekken", {RE_UPPER_LOWER("", "\\p{N}")}, true, true},
    {"gpt-4o llama4 kanana2 talkie minimax-m2",
     {RE_UPPER_LOWER("(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?", "\\p{N}{1,3}")}, false, false},
    {"seed-coder", {RE_SEED_CODER}, false, false},
    {"bailingmoe bailingmoe2 llada-moe", {RE_BAILING}, false, false},
};

/* GPT-2's printable bytes map to themselves; the other 68 take code points 256.. in byte order:
 * 0x00-0x20 -> 256-288, 0x7F-0xA0 -> 289-322, 0xAD -> 323 (openai/gpt-2 encoder.py). */
uint32_t rlx_tok_byte_to_cp(uint8_t b) {
    if (b <= 0x20) return 256u + b;
    if (b >= 0x7F && b <= 0xA0) return b + 162u;
    if (b == 0xAD) return 323;
    return b;
}

int rlx_tok_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF)) return (int)cp;
    if (cp >= 256 && cp <= 288) return (int)(cp - 256);
    if (cp >= 289 && cp <= 322) return (int)(cp - 162);
    if (cp == 323) return 0xAD;
    return -1;
}

static rlx_status compile_regex(rlx_tok_pretok *p, const char *pattern, const char *name) {
    if (p->n_regex == RLX_TOK_MAX_REGEX)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "pre-tokenizer '%s': more than %d regexes", name, RLX_TOK_MAX_REGEX);
    int err;
    PCRE2_SIZE at;
    /* DOLLAR_ENDONLY: '$' means the end of the piece, as in ECMAScript and Rust, not "before a
     * final newline". USE_OFFSET_LIMIT: the matcher bounds the start positions of each call. */
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY | PCRE2_USE_OFFSET_LIMIT, &err, &at,
                                   NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "pre-tokenizer '%s': regex /%.200s/ does not compile at offset %zu: %s",
                          name, pattern, (size_t)at, (const char *)msg);
    }
    char *source = strdup(pattern);
    if (!source) {
        pcre2_code_free(re);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "pre-tokenizer '%s': out of memory", name);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: without JIT, pcre2_match interprets */
    p->source[p->n_regex] = source;
    p->regex[p->n_regex++] = re;
    return NULL;
}

static rlx_status set_name(rlx_tok_pretok *p, const char *name) {
    p->name = strdup(name);
    return p->name ? NULL : rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "pre-tokenizer '%s': out of memory", name);
}

static bool name_in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        const char *e = strchr(s, ' ');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len == n && !memcmp(s, name, n)) return true;
        if (!e) break;
        s = e + 1;
    }
    return false;
}

rlx_status rlx_tok_pretok_named(rlx_tok_pretok *p, const char *name, bool *ignore_merges, bool *add_bos) {
    *p = (rlx_tok_pretok){0};
    const size_t n_defs = sizeof PRETOKS / sizeof PRETOKS[0];
    for (size_t i = 0; i < n_defs; i++) {
        if (!name_in_list(PRETOKS[i].names, name)) continue;
        rlx_status s = set_name(p, name);
        for (size_t r = 0; !s && r < RLX_TOK_MAX_REGEX && PRETOKS[i].regex[r]; r++)
            s = compile_regex(p, PRETOKS[i].regex[r], name);
        if (s) {
            rlx_tok_pretok_free(p);
            return s;
        }
        p->byte_encode = true;
        *ignore_merges = PRETOKS[i].ignore_merges;
        *add_bos = PRETOKS[i].add_bos;
        return NULL;
    }
    char list[2048];
    size_t o = 0;
    for (size_t i = 0; i < n_defs && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? " " : "", PRETOKS[i].names);
    return rlx_errorf(RLX_ERR_UNSUPPORTED, "unknown pre-tokenizer '%s' (tokenizer.ggml.pre); supported: %s", name, list);
}

rlx_status rlx_tok_pretok_regexes(rlx_tok_pretok *p, const char *name, const char *const *regexes, uint32_t n,
                                  bool byte_encode) {
    *p = (rlx_tok_pretok){0};
    rlx_status s = set_name(p, name);
    for (uint32_t i = 0; !s && i < n; i++) s = compile_regex(p, regexes[i], name);
    if (s) {
        rlx_tok_pretok_free(p);
        return s;
    }
    p->byte_encode = byte_encode;
    return NULL;
}

void rlx_tok_pretok_free(rlx_tok_pretok *p) {
    for (uint32_t i = 0; i < p->n_regex; i++) {
        pcre2_code_free(p->regex[i]);
        free(p->source[i]);
    }
    free(p->name);
    *p = (rlx_tok_pretok){0};
}

/* A list of (offset, length) pieces of the text. */
typedef struct {
    size_t *off;
    size_t *len;
    size_t n, cap;
} piece_list;

static rlx_status piece_push(piece_list *l, size_t off, size_t len) {
    if (len == 0) return NULL;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        size_t *o = realloc(l->off, cap * sizeof *o);
        if (o) l->off = o;
        size_t *n = realloc(l->len, cap * sizeof *n);
        if (n) l->len = n;
        if (!o || !n) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "pre-tokenizer: out of memory for %zu pieces", cap);
        l->cap = cap;
    }
    l->off[l->n] = off;
    l->len[l->n] = len;
    l->n++;
    return NULL;
}

static void piece_free(piece_list *l) {
    free(l->off);
    free(l->len);
    *l = (piece_list){0};
}

/* ---- matching within a budget ----
 *
 * PCRE2's match limit restarts at every start position, so one call on a pattern that backtracks
 * just under the limit everywhere costs limit x length. Each search here therefore first runs
 * unanchored with a small limit over a window of WINDOW bytes of start positions, which costs at
 * most (WINDOW + 1) x FIRST_LIMIT units and is charged so. A start position that needs more (a long
 * run of spaces under `\s*[\r\n]+`) is then found by anchored calls, one position at a time, each
 * retried with 8 times the limit until it completes or the encode's budget is spent: every unit
 * the matcher may use is charged before or as it is used. */
#define FIRST_LIMIT 32u             /* above what real patterns need per position on prose */
#define WINDOW 32u                  /* bytes of start positions one unanchored call may try */
#define BUDGET_FIXED (1u << 22)     /* what a short text may spend */
#define BUDGET_PER_BYTE 256u        /* per byte of text and regex */
#define BUDGET_MAX (1ull << 30)     /* whatever the length of the text */
#define DEPTH_LIMIT 10000u          /* the interpreter's backtracking depth */
#define HEAP_LIMIT_KIB (64u * 1024) /* the interpreter's backtracking frames */

typedef struct {
    const rlx_tok_pretok *p;
    uint32_t r; /* the regex in use */
    rlx_tok_budget *budget;
    pcre2_match_data *md;    /* owned */
    pcre2_match_context *mc; /* owned */
} matcher;

rlx_tok_budget rlx_tok_regex_budget(const rlx_tok_pretok *p, size_t len) {
    uint64_t per = (uint64_t)BUDGET_PER_BYTE * (p->n_regex ? p->n_regex : 1);
    uint64_t total = len > (BUDGET_MAX - BUDGET_FIXED) / per ? BUDGET_MAX : BUDGET_FIXED + per * len;
    return (rlx_tok_budget){total, total};
}

static rlx_status matcher_init(matcher *m) {
    m->md = pcre2_match_data_create(1, NULL);
    m->mc = pcre2_match_context_create(NULL);
    if (!m->md || !m->mc)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "pre-tokenizer '%s': out of memory for match data", m->p->name);
    /* The JIT ignores these and keeps to its fixed stack; the interpreter, which takes over when
     * that stack runs out, keeps to them. */
    pcre2_set_depth_limit(m->mc, DEPTH_LIMIT);
    pcre2_set_heap_limit(m->mc, HEAP_LIMIT_KIB);
    return NULL;
}

static void matcher_free(matcher *m) {
    pcre2_match_data_free(m->md);
    pcre2_match_context_free(m->mc);
}

static rlx_status match_error(const matcher *m, size_t len, int rc) {
    const char *name = m->p->name, *re = m->p->source[m->r];
    unsigned r = m->r;
    if (rc == PCRE2_ERROR_MATCHLIMIT)
        return rlx_errorf(RLX_ERR_BAD_FILE, "pre-tokenizer '%s' regex %u /%.100s/: its matching cost exceeded the "
                          "budget of %" PRIu64 " steps for this text (%zu-byte piece): the pattern backtracks "
                          "without bound", name, r, re, m->budget->total, len);
    if (rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT)
        return rlx_errorf(RLX_ERR_BAD_FILE, "pre-tokenizer '%s' regex %u /%.100s/ on a %zu-byte piece: its "
                          "backtracking exceeded the %s limit (%s)", name, r, re, len,
                          rc == PCRE2_ERROR_DEPTHLIMIT ? "depth" : "heap",
                          rc == PCRE2_ERROR_DEPTHLIMIT ? "10000 levels" : "64 MiB");
    if (rc == PCRE2_ERROR_NOMEMORY)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "pre-tokenizer '%s' regex %u on a %zu-byte piece: out of memory", name,
                          r, len);
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return rlx_errorf(RLX_ERR_INTERNAL, "pre-tokenizer '%s' regex %u on a %zu-byte piece: %s", name, r, len,
                      (const char *)msg);
}

/* One pcre2_match trying start positions start .. last with the given limit. The JIT's fixed
 * stack can run out on deep backtracking; the interpreter then runs it again (*runs = 2). */
static int run(matcher *m, const char *s, size_t n, size_t start, size_t last, uint32_t opts, uint32_t limit,
               unsigned *runs) {
    pcre2_set_match_limit(m->mc, limit);
    pcre2_set_offset_limit(m->mc, last);
    const pcre2_code *re = m->p->regex[m->r];
    *runs = 1;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, n, start, opts | PCRE2_NO_UTF_CHECK, m->md, m->mc);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        *runs = 2;
        rc = pcre2_match(re, (PCRE2_SPTR)s, n, start, opts | PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, m->md, m->mc);
    }
    return rc;
}

static size_t next_char(const char *s, size_t n, size_t i) {
    for (i++; i < n && ((uint8_t)s[i] & 0xC0) == 0x80; i++) {}
    return i;
}

static void take_match(const matcher *m, bool *found, size_t *ms, size_t *me) {
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(m->md);
    *found = true;
    *ms = ov[0];
    *me = ov[1];
}

/* The slow path: start positions start .. last one by one, each with a growing limit. */
static rlx_status step_anchored(matcher *m, const char *s, size_t n, size_t start, size_t last, bool *found,
                                size_t *ms, size_t *me) {
    for (size_t p = start; p <= last && p < n; p = next_char(s, n, p)) {
        for (uint64_t limit = FIRST_LIMIT;; limit *= 8) {
            uint64_t room = m->budget->left / 2; /* a call may run twice (run) */
            uint64_t l = limit < room ? limit : room;
            if (l > UINT32_MAX) l = UINT32_MAX;
            if (l == 0) return match_error(m, n, PCRE2_ERROR_MATCHLIMIT);
            unsigned runs;
            int rc = run(m, s, n, p, p, PCRE2_ANCHORED, (uint32_t)l, &runs);
            m->budget->left -= runs * l;
            if (rc >= 0) {
                take_match(m, found, ms, me);
                return NULL;
            }
            if (rc == PCRE2_ERROR_NOMATCH) break;
            if (rc != PCRE2_ERROR_MATCHLIMIT) return match_error(m, n, rc);
            if (l < limit) return match_error(m, n, rc); /* it had all that was left */
        }
    }
    *found = false;
    return NULL;
}

/* The leftmost match in s[0, n) starting at or after start (*found false: none). */
static rlx_status find_match(matcher *m, const char *s, size_t n, size_t start, bool *found, size_t *ms, size_t *me) {
    while (start < n) {
        size_t last = n - start > WINDOW ? start + WINDOW : n; /* the last start position to try */
        uint64_t worst = 2 * (uint64_t)(last - start + 1) * FIRST_LIMIT;
        int rc = PCRE2_ERROR_MATCHLIMIT;
        if (worst <= m->budget->left) {
            unsigned runs;
            rc = run(m, s, n, start, last, 0, FIRST_LIMIT, &runs);
            size_t tried = rc >= 0 ? pcre2_get_ovector_pointer(m->md)[0] - start + 1 : last - start + 1;
            m->budget->left -= (uint64_t)runs * tried * FIRST_LIMIT;
        }
        if (rc >= 0) {
            take_match(m, found, ms, me);
            return NULL;
        }
        if (rc == PCRE2_ERROR_MATCHLIMIT) {
            RLX_TRY(step_anchored(m, s, n, start, last, found, ms, me));
            if (*found) return NULL;
        } else if (rc != PCRE2_ERROR_NOMATCH) {
            return match_error(m, n, rc);
        }
        start = next_char(s, n, last);
    }
    *found = false;
    return NULL;
}

/* Splits text[off, off + len) by the matcher's regex into out: matches and the gaps between them. */
static rlx_status split_piece(matcher *m, const char *text, size_t off, size_t len, piece_list *out) {
    const char *s = text + off;
    size_t start = 0, last = 0;
    while (start < len) {
        bool found;
        size_t ms, me;
        RLX_TRY(find_match(m, s, len, start, &found, &ms, &me));
        if (!found) break;
        if (me == ms) { /* an empty match splits nothing: step over one character */
            start = ms + rlx_utf8_lead_len((uint8_t)s[ms]);
            continue;
        }
        if (ms > last) RLX_TRY(piece_push(out, off + last, ms - last));
        RLX_TRY(piece_push(out, off + ms, me - ms));
        last = start = me;
    }
    if (last < len) RLX_TRY(piece_push(out, off + last, len - last));
    return NULL;
}

static rlx_status push_word(const rlx_tok_pretok *p, const char *s, size_t n, rlx_tok_words *w) {
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        size_t *o = realloc(w->off, cap * sizeof *o);
        if (o) w->off = o;
        uint32_t *l = realloc(w->len, cap * sizeof *l);
        if (l) w->len = l;
        if (!o || !l) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "pre-tokenizer: out of memory for %zu words", cap);
        w->cap = cap;
    }
    size_t start = w->bytes.len;
    if (!p->byte_encode) {
        RLX_TRY(rlx_tok_buf_append(&w->bytes, s, n));
    } else {
        for (size_t i = 0; i < n; i++) {
            char u[4];
            size_t k = rlx_utf8_put(rlx_tok_byte_to_cp((uint8_t)s[i]), u);
            RLX_TRY(rlx_tok_buf_append(&w->bytes, u, k));
        }
    }
    if (w->bytes.len - start > UINT32_MAX) return rlx_errorf(RLX_ERR_UNSUPPORTED, "pre-tokenizer: word over 4 GiB");
    w->off[w->n] = start;
    w->len[w->n] = (uint32_t)(w->bytes.len - start);
    w->n++;
    return NULL;
}

rlx_status rlx_tok_pretok_split(const rlx_tok_pretok *p, const char *text, size_t len, rlx_tok_budget *budget,
                                rlx_tok_words *w) {
    piece_list cur = {0}, next = {0};
    matcher m = {.p = p, .budget = budget};
    rlx_status s = piece_push(&cur, 0, len);
    if (!s && p->n_regex) s = matcher_init(&m);
    for (uint32_t r = 0; !s && r < p->n_regex; r++) {
        next.n = 0;
        m.r = r;
        for (size_t i = 0; !s && i < cur.n; i++) s = split_piece(&m, text, cur.off[i], cur.len[i], &next);
        piece_list t = cur;
        cur = next;
        next = t;
    }
    for (size_t i = 0; !s && i < cur.n; i++) s = push_word(p, text + cur.off[i], cur.len[i], w);
    matcher_free(&m);
    piece_free(&cur);
    piece_free(&next);
    return s;
}

void rlx_tok_words_free(rlx_tok_words *w) {
    rlx_tok_buf_free(&w->bytes);
    free(w->off);
    free(w->len);
    *w = (rlx_tok_words){0};
}
