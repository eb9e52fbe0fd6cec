/* Tokenizers: text -> token ids -> text, for the vocabularies LLMs ship with.
 *
 * Sources:
 *  - a GGUF file's tokenizer.ggml.* metadata: "gpt2" (byte-level BPE with a named pre-tokenizer),
 *    "llama" (SentencePiece: scores, byte fallback <0xNN>, space prefix), "bert" (WordPiece);
 *  - an HF directory: tokenizer.json (BPE), or vocab.json + merges.txt, or a SentencePiece
 *    tokenizer.model, each with tokenizer_config.json for special tokens.
 * Token ids and text follow llama.cpp's llama-vocab.cpp, whose test vectors the tests replay.
 *
 * Text policy:
 *  - Input text is UTF-8. Every byte that does not start a well-formed UTF-8 sequence (stray
 *    continuation bytes, truncated sequences, overlong forms, surrogates, > U+10FFFF) is replaced
 *    by U+FFFD before tokenizing, one U+FFFD per such byte, as llama.cpp does. Bad text is not
 *    an error (running out of memory is, and so is a pre-tokenizer regex of the tokenizer file
 *    whose backtracking exceeds the matching budget of one encode: RLX_ERR_BAD_FILE naming it).
 *  - Special (control) tokens such as <|im_start|> are recognised in the text only with
 *    RLX_ENCODE_PARSE_SPECIAL; otherwise their text is tokenized as ordinary characters.
 *    User-defined tokens (GGUF token type 4, HF added tokens with "special": false) are always
 *    recognised, as in HF tokenizers.
 *  - Decoding is exact: the bytes that encoding consumed come back (byte-level BPE byte mapping,
 *    SentencePiece U+2581 -> space and <0xNN> bytes). Nothing is cleaned up.
 *
 * A tokenizer is immutable once opened: encode/decode may run on several threads at once. */
#ifndef RLX_TOKENIZER_H
#define RLX_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_tokenizer rlx_tokenizer;

#define RLX_TOKEN_NULL (-1) /* "no such token" */

typedef enum {
    RLX_TOKENIZER_BPE = 1, /* byte-level BPE (GGUF "gpt2") */
    RLX_TOKENIZER_SPM = 2, /* SentencePiece (GGUF "llama") */
    RLX_TOKENIZER_WPM = 3, /* WordPiece (GGUF "bert") */
} rlx_tokenizer_kind;

/* Token types, numbered as GGUF's tokenizer.ggml.token_type (and SentencePiece's piece types). */
typedef enum {
    RLX_TOKEN_TYPE_UNDEFINED = 0,
    RLX_TOKEN_TYPE_NORMAL = 1,
    RLX_TOKEN_TYPE_UNKNOWN = 2,
    RLX_TOKEN_TYPE_CONTROL = 3,
    RLX_TOKEN_TYPE_USER_DEFINED = 4,
    RLX_TOKEN_TYPE_UNUSED = 5,
    RLX_TOKEN_TYPE_BYTE = 6,
} rlx_token_type;

typedef enum {
    RLX_SPECIAL_BOS,
    RLX_SPECIAL_EOS,
    RLX_SPECIAL_EOT,  /* end of turn: <|eot_id|>, <|im_end|>, <end_of_turn>, ... */
    RLX_SPECIAL_EOM,
    RLX_SPECIAL_UNK,
    RLX_SPECIAL_SEP,
    RLX_SPECIAL_PAD,
    RLX_SPECIAL_MASK,
    RLX_SPECIAL_COUNT
} rlx_special;

/* Opens a tokenizer from a GGUF file, an HF model directory, or an HF tokenizer.json file.
 * *out is set only on success. */
rlx_status rlx_tokenizer_open(const char *path, rlx_tokenizer **out);
void rlx_tokenizer_close(rlx_tokenizer *t); /* NULL is fine */

rlx_tokenizer_kind rlx_tokenizer_get_kind(const rlx_tokenizer *t);
/* One line, e.g. "BPE, pre-tokenizer qwen2, 151936 tokens, 151387 merges"; borrowed from t. */
const char *rlx_tokenizer_describe(const rlx_tokenizer *t);
int32_t rlx_tokenizer_vocab_size(const rlx_tokenizer *t);
/* The id of a special token, or RLX_TOKEN_NULL when the vocabulary has none. */
int32_t rlx_tokenizer_special(const rlx_tokenizer *t, rlx_special which);
/* Whether RLX_ENCODE_ADD_SPECIAL puts a BOS in front (the vocabulary's add_bos_token). */
bool rlx_tokenizer_adds_bos(const rlx_tokenizer *t);
/* True for tokens that end generation: EOS, EOT, EOM and the end-of-turn tokens of known chat
 * formats (<|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|>, ...). */
bool rlx_tokenizer_is_eog(const rlx_tokenizer *t, int32_t id);
rlx_token_type rlx_tokenizer_token_type(const rlx_tokenizer *t, int32_t id); /* UNDEFINED out of range */
/* The token's vocabulary text (e.g. "Ġworld", "▁the", "<0x0A>"), NUL-terminated, borrowed from t;
 * NULL when id is out of range. *len (may be NULL) receives its length. */
const char *rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, size_t *len);
/* The id whose vocabulary text is exactly piece[0, len), or RLX_TOKEN_NULL. */
int32_t rlx_tokenizer_find(const rlx_tokenizer *t, const char *piece, size_t len);

enum {
    /* Add what the vocabulary adds around a text: BOS (add_bos_token), EOS (add_eos_token), and for
     * WordPiece [CLS] ... [SEP]. Without it nothing is added (llama.cpp's test vectors). */
    RLX_ENCODE_ADD_SPECIAL = 1u << 0,
    /* Recognise the text of control tokens (<|im_start|>, <s>, ...) as those tokens. */
    RLX_ENCODE_PARSE_SPECIAL = 1u << 1,
};

/* Tokenizes text[0, len). *ids (owned by the caller, free()) receives *n_ids ids; an empty text
 * gives no ids (plus BOS/EOS when asked), and *ids is then a valid pointer to free. */
rlx_status rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, unsigned flags,
                                int32_t **ids, size_t *n_ids);

enum {
    /* Render control and unknown tokens as their text (<|im_end|>, <s>); by default they decode
     * to nothing. */
    RLX_DECODE_SPECIAL = 1u << 0,
    /* The ids continue earlier text (streaming after a prompt): keep the leading space that a
     * SentencePiece or WordPiece vocabulary's space prefix puts on the first word. By default the
     * ids are a whole text and that one space is dropped, so decode(encode(x)) == x. */
    RLX_DECODE_CONTINUE = 1u << 1,
};

/* Decodes ids to bytes. *text (owned by the caller, free()) is NUL-terminated after *len bytes.
 * Ids outside [0, vocab_size) are an RLX_ERR_INVALID_ARGUMENT naming the position. */
rlx_status rlx_tokenizer_decode(const rlx_tokenizer *t, const int32_t *ids, size_t n_ids, unsigned flags,
                                char **text, size_t *len);

/* Streaming decoder for printing tokens as they are generated. It holds back a UTF-8 sequence
 * that is split across tokens until it is complete, so a terminal never sees half a character.
 * Bytes that can never become valid UTF-8 are passed through unchanged, so the concatenation of
 * everything it returns equals rlx_tokenizer_decode of the same ids with the same flags. */
typedef struct rlx_detokenizer rlx_detokenizer;

/* t is borrowed and must outlive the decoder. flags: RLX_DECODE_*. */
rlx_status rlx_detokenizer_create(const rlx_tokenizer *t, unsigned flags, rlx_detokenizer **out);
/* Adds one token. *text receives the bytes that are ready (possibly none: *len = 0), borrowed
 * until the next call on d. */
rlx_status rlx_detokenizer_push(rlx_detokenizer *d, int32_t id, const char **text, size_t *len);
/* Returns whatever is still held back (an incomplete sequence at the very end) and resets d to
 * the start of a new text. */
void rlx_detokenizer_finish(rlx_detokenizer *d, const char **text, size_t *len);
void rlx_detokenizer_destroy(rlx_detokenizer *d); /* NULL is fine */

#ifdef __cplusplus
}
#endif
#endif
