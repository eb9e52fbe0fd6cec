/* Tokenizer internals shared by text/tokenizer/tokenizer*.c: the vocabulary table, BPE merge ranks, the
 * pre-tokenizer, and the rlx_tokenizer object the loaders fill in.
 *
 * Flow: a loader (tokenizer_gguf.c, tokenizer_hf.c, tokenizer_spm_model.c) fills vocabulary,
 * merges, pre-tokenizer, special ids and flags, then calls rlx_tok_finish, which builds the lookup
 * tables every encode/decode uses. Encoding (tokenizer.c) splits the text on special tokens and
 * hands each text fragment to the model's algorithm (tokenizer_bpe.c, tokenizer_spm.c,
 * tokenizer_wpm.c). */
#ifndef RLX_TEXT_TOKENIZER_H
#define RLX_TEXT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/format/gguf.h"
#include "rlx/status.h"
#include "rlx/tokenizer.h"

/* Builds a tokenizer from an open GGUF's tokenizer.ggml.* metadata. g is only read during the
 * call: the tokenizer copies what it keeps. */
rlx_status rlx_tokenizer_from_gguf(const rlx_gguf *g, rlx_tokenizer **out);

/* ---- growable byte buffer and id list ---- */

typedef struct rlx_tok_buf {
    char *p; /* owned, cap bytes */
    size_t len;
    size_t cap;
} rlx_tok_buf;

rlx_status rlx_tok_buf_append(rlx_tok_buf *b, const void *data, size_t n);
void rlx_tok_buf_free(rlx_tok_buf *b);

typedef struct rlx_tok_ids {
    int32_t *v; /* owned, cap entries */
    size_t n;
    size_t cap;
} rlx_tok_ids;

rlx_status rlx_tok_ids_push(rlx_tok_ids *ids, int32_t id);

uint64_t rlx_tok_hash(const char *s, size_t n, uint64_t seed);

/* ---- vocabulary ---- */

/* Per-token flags beyond the type (HF added tokens' lstrip/rstrip: whitespace next to the token
 * in the text is absorbed by it). */
enum { RLX_TOK_LSTRIP = 1u << 0, RLX_TOK_RSTRIP = 1u << 1 };

typedef struct rlx_tok_vocab {
    uint32_t n;
    rlx_tok_buf text;    /* owned: every token's text, each NUL-terminated */
    size_t *text_off;    /* owned, n: offset of token i's text in text.p (SIZE_MAX until set) */
    uint32_t *text_len;  /* owned, n */
    float *score;        /* owned, n */
    uint8_t *type;       /* owned, n: rlx_token_type */
    uint8_t *flags;      /* owned, n: RLX_TOK_* */
    uint32_t *slots;     /* owned, mask + 1 entries: id + 1 of the token hashed there, 0 = empty */
    uint32_t mask;
    uint32_t max_len;    /* longest token text in bytes */
    rlx_tok_buf piece;   /* owned: what each token decodes to (control tokens: their text) */
    size_t *piece_off;   /* owned, n */
    uint32_t *piece_len; /* owned, n */
} rlx_tok_vocab;

/* Allocates n empty entries (type UNDEFINED, score 0). */
rlx_status rlx_tok_vocab_init(rlx_tok_vocab *v, uint32_t n);
/* Sets entry id; each id is set at most once (a second set is an error naming both texts). */
rlx_status rlx_tok_vocab_set(rlx_tok_vocab *v, uint32_t id, const char *text, size_t len, float score,
                             uint8_t type);
/* Fills ids never set with "[PAD<id>]" (type UNUSED, as llama.cpp's converter pads), gives empty
 * texts a "[EMPTY_<id>]" placeholder (llama.cpp), and builds the text -> id hash. Duplicate texts
 * are a BAD_FILE error naming both ids; `what` names the source in messages. */
rlx_status rlx_tok_vocab_index(rlx_tok_vocab *v, const char *what);
void rlx_tok_vocab_free(rlx_tok_vocab *v);
int32_t rlx_tok_vocab_find(const rlx_tok_vocab *v, const char *s, size_t len);

static inline const char *rlx_tok_text(const rlx_tok_vocab *v, int32_t id) {
    return v->text.p + v->text_off[id];
}

/* ---- BPE merges: (left, right) -> rank ---- */

typedef struct rlx_tok_merges {
    uint32_t n;
    rlx_tok_buf text;   /* owned: left then right of each merge, back to back */
    size_t *off;        /* owned, cap entries */
    uint32_t *left_len; /* owned */
    uint32_t *right_len;/* owned */
    uint32_t cap;
    uint32_t *slots;    /* owned, mask + 1 entries: rank + 1, 0 = empty */
    uint32_t mask;
} rlx_tok_merges;

/* Adds the next merge (rank = number added so far). A pair seen before keeps its first rank. */
rlx_status rlx_tok_merges_add(rlx_tok_merges *m, const char *left, size_t left_len, const char *right,
                              size_t right_len);
/* Splits "left right" at the first space after the first byte (llama.cpp's rule) and adds it.
 * The error names the merge; the caller adds where it is. */
rlx_status rlx_tok_merges_add_line(rlx_tok_merges *m, const char *line, size_t len);
rlx_status rlx_tok_merges_index(rlx_tok_merges *m);
int32_t rlx_tok_merges_rank(const rlx_tok_merges *m, const char *left, size_t left_len, const char *right,
                            size_t right_len); /* -1 when not a merge */
void rlx_tok_merges_free(rlx_tok_merges *m);

/* ---- pre-tokenizer (tokenizer_pretok.c) ---- */

#define RLX_TOK_MAX_REGEX 8

typedef struct rlx_tok_pretok {
    char *name;                     /* owned: llama.cpp's pre-tokenizer name, or "tokenizer.json" */
    uint32_t n_regex;
    void *regex[RLX_TOK_MAX_REGEX]; /* owned: compiled pcre2_code_8, applied in order */
    char *source[RLX_TOK_MAX_REGEX];/* owned: each regex's pattern, for messages */
    bool byte_encode;               /* map words' bytes to GPT-2's printable characters */
} rlx_tok_pretok;

/* The regex work one encode may do, in PCRE2 match-limit units (each unit is one backtracking
 * step of the matcher). PCRE2's own limit restarts at every start position, so a pattern that
 * backtracks just under it everywhere costs limit x text length; this budget bounds the sum. */
typedef struct rlx_tok_budget {
    uint64_t total; /* what the encode started with */
    uint64_t left;
} rlx_tok_budget;

/* The budget of one encode of a text of len bytes with p: a fixed part plus a part per byte and
 * regex, capped; several times what the real patterns are charged on long texts (docs/RELIABILITY.md). */
rlx_tok_budget rlx_tok_regex_budget(const rlx_tok_pretok *p, size_t len);

/* The regex list of one of llama.cpp's named pre-tokenizers. *ignore_merges tells whether that
 * pre-tokenizer takes a word whole when it is in the vocabulary; *add_bos its default add_bos
 * (llama.cpp's, before add_bos_token overrides it). Unknown names are an UNSUPPORTED error that
 * lists the supported ones. */
rlx_status rlx_tok_pretok_named(rlx_tok_pretok *p, const char *name, bool *ignore_merges, bool *add_bos);
/* A custom regex list (HF tokenizer.json Split pre-tokenizers), each splitting "Isolated". */
rlx_status rlx_tok_pretok_regexes(rlx_tok_pretok *p, const char *name, const char *const *regexes, uint32_t n,
                                  bool byte_encode);
void rlx_tok_pretok_free(rlx_tok_pretok *p);

typedef struct rlx_tok_words {
    rlx_tok_buf bytes; /* owned: the words back to back (byte-encoded when the pre-tokenizer says) */
    size_t *off;       /* owned, cap entries */
    uint32_t *len;     /* owned */
    size_t n;
    size_t cap;
} rlx_tok_words;

/* Appends the words of text[0, len) (valid UTF-8) to *w. Each regex splits every current piece
 * into its matches and the gaps between them (HF Split, behavior Isolated; llama.cpp's
 * unicode_regex_split). The matching is charged to *budget; an error names the regex when it runs
 * out. */
rlx_status rlx_tok_pretok_split(const rlx_tok_pretok *p, const char *text, size_t len, rlx_tok_budget *budget,
                                rlx_tok_words *w);
void rlx_tok_words_free(rlx_tok_words *w);

/* GPT-2's byte <-> printable-character mapping (openai/gpt-2 encoder.py bytes_to_unicode). */
uint32_t rlx_tok_byte_to_cp(uint8_t b);
int rlx_tok_cp_to_byte(uint32_t cp); /* -1 when cp is not one of the 256 */

/* ---- the tokenizer ---- */

struct rlx_tokenizer {
    rlx_tokenizer_kind kind;
    rlx_tok_vocab vocab;
    rlx_tok_merges merges;    /* BPE */
    rlx_tok_pretok pretok;    /* BPE */
    int32_t special[RLX_SPECIAL_COUNT];
    bool add_bos, add_eos, add_sep;
    bool add_space_prefix;    /* SPM: " " before the text and after each special token */
    bool ignore_merges;       /* BPE: a word that is a token is taken whole */
    bool bpe_prefix_space;    /* BPE (HF ByteLevel add_prefix_space): " " before each fragment */
    bool nfc;                 /* normalize the text to NFC first (HF NFC normalizer, Qwen2Tokenizer) */
    bool wpm_lowercase;       /* WPM: BertNormalizer lowercase */
    bool wpm_strip_accents;   /* WPM: BertNormalizer strip_accents (NFD, drop Mn) */
    uint8_t *eog;             /* owned, vocab.n: 1 for end-of-generation tokens */
    int32_t *specials;        /* owned: CONTROL/USER_DEFINED/UNKNOWN ids, longest text first */
    uint32_t n_specials;
    char *description;        /* owned */
};

/* Allocates a tokenizer with every special id RLX_TOKEN_NULL. */
rlx_status rlx_tok_new(rlx_tokenizer_kind kind, rlx_tokenizer **out);
/* After a loader filled vocabulary and settings: indexes the vocabulary, validates special ids,
 * finds end-of-generation tokens, and builds the special-token list and the decode pieces.
 * On error the caller still owns t (rlx_tokenizer_close). */
rlx_status rlx_tok_finish(rlx_tokenizer *t, const char *what);

/* Model algorithms: each appends the ids of one text fragment (valid UTF-8, no special tokens). */
rlx_status rlx_tok_bpe_encode(const rlx_tokenizer *t, const char *text, size_t len, rlx_tok_budget *budget,
                              rlx_tok_ids *out);
rlx_status rlx_tok_spm_encode(const rlx_tokenizer *t, const char *text, size_t len, bool space_prefix,
                              rlx_tok_ids *out);
rlx_status rlx_tok_wpm_encode(const rlx_tokenizer *t, const char *text, size_t len, rlx_tok_ids *out);

/* The bytes token id decodes to under RLX_DECODE_* flags (none for control tokens without
 * RLX_DECODE_SPECIAL). *at_start is true until the first non-empty piece of a text: that piece
 * loses the one leading space a space-prefixing vocabulary put there. Checks the id's range. */
rlx_status rlx_tok_decode_piece(const rlx_tokenizer *t, int32_t id, unsigned flags, bool *at_start, const char **bytes,
                                size_t *len);

/* The byte an SPM/BPE byte token (<0xNN>) stands for, or -1. */
int rlx_tok_byte_token_value(const char *text, size_t len);

/* HF loaders (tokenizer_hf.c, tokenizer_spm_model.c). */
rlx_status rlx_tok_load_hf_dir(const char *dir, rlx_tokenizer **out);
rlx_status rlx_tok_load_hf_json(const char *path, const char *config_path, rlx_tokenizer **out);
rlx_status rlx_tok_load_spm_model(const char *path, const char *config_path, rlx_tokenizer **out);

/* Applies tokenizer_config.json (NULL: nothing): bos/eos/unk/pad/sep/mask tokens named by text
 * when the indexed vocabulary has them, add_bos_token, add_eos_token. */
rlx_status rlx_tok_apply_hf_config(const char *config_path, rlx_tokenizer *t);

/* Reads a whole file (NUL-terminated; *len excludes the NUL). */
rlx_status rlx_tok_read_file(const char *path, char **data, size_t *len);

#endif
