/* SentencePiece tokenizer.model files (a serialized ModelProto, sentencepiece_model.proto):
 *   ModelProto      1: repeated SentencePiece pieces   2: TrainerSpec   3: NormalizerSpec
 *   SentencePiece   1: string piece   2: float score   3: Type (NORMAL=1 UNKNOWN=2 CONTROL=3
 *                   USER_DEFINED=4 UNUSED=5 BYTE=6; default NORMAL)
 *   TrainerSpec     3: model_type (UNIGRAM=1 default, BPE=2)   40: unk_id   41: bos_id
 *                   42: eos_id   43: pad_id (int32; -1 = none)
 *   NormalizerSpec  3: add_dummy_prefix (default true)
 * Protobuf wire format: https://protobuf.dev/programming-guides/encoding/. Only BPE models are
 * accepted: they tokenize with the same score-ordered merging as GGUF "llama" vocabularies
 * (Gemma, Llama 2); a unigram model needs Viterbi segmentation, which rlx does not implement. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"

typedef struct {
    const uint8_t *p, *end;
    const char *what;
} pb;

typedef struct {
    uint32_t field;
    uint32_t wire;     /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
    uint64_t value;    /* varint / fixed value */
    pb sub;            /* length-delimited payload */
} pb_field;

static rlx_status pb_varint(pb *b, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: truncated varint", b->what);
        uint8_t c = *b->p++;
        v |= (uint64_t)(c & 0x7F) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return NULL;
        }
    }
    return rlx_errorf(RLX_ERR_BAD_FILE, "%s: varint longer than 10 bytes", b->what);
}

static rlx_status pb_fixed(pb *b, size_t n, uint64_t *out) {
    if ((size_t)(b->end - b->p) < n) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: truncated fixed%zu field", b->what, 8 * n);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)b->p[i] << (8 * i);
    b->p += n;
    *out = v;
    return NULL;
}

/* Reads the next field of b into *f. */
static rlx_status pb_next(pb *b, pb_field *f) {
    uint64_t key = 0;
    RLX_TRY(pb_varint(b, &key));
    f->field = (uint32_t)(key >> 3);
    f->wire = (uint32_t)(key & 7);
    f->value = 0;
    switch (f->wire) {
    case 0: return pb_varint(b, &f->value);
    case 1: return pb_fixed(b, 8, &f->value);
    case 5: return pb_fixed(b, 4, &f->value);
    case 2: {
        uint64_t n = 0;
        RLX_TRY(pb_varint(b, &n));
        if (n > (uint64_t)(b->end - b->p))
            return rlx_errorf(RLX_ERR_BAD_FILE, "%s: field %" PRIu32 " of %" PRIu64 " bytes overruns its message",
                              b->what, f->field, n);
        f->sub = (pb){b->p, b->p + n, b->what};
        b->p += n;
        return NULL;
    }
    default:
        return rlx_errorf(RLX_ERR_BAD_FILE, "%s: field %" PRIu32 " has unsupported wire type %" PRIu32, b->what, f->field,
                          f->wire);
    }
}

typedef struct {
    uint32_t n_pieces;
    int64_t model_type, unk, bos, eos, pad;
    bool add_dummy_prefix;
} spm_header;

static rlx_status read_trainer_spec(pb b, spm_header *h) {
    pb_field f;
    while (b.p < b.end) {
        RLX_TRY(pb_next(&b, &f));
        if (f.wire != 0) continue;
        int64_t v = (int64_t)(int32_t)(uint32_t)f.value; /* int32 fields: negatives are sign-extended */
        if (f.field == 3) h->model_type = v;
        else if (f.field == 40) h->unk = v;
        else if (f.field == 41) h->bos = v;
        else if (f.field == 42) h->eos = v;
        else if (f.field == 43) h->pad = v;
    }
    return NULL;
}

static rlx_status read_normalizer_spec(pb b, spm_header *h) {
    pb_field f;
    while (b.p < b.end) {
        RLX_TRY(pb_next(&b, &f));
        if (f.field == 3 && f.wire == 0) h->add_dummy_prefix = f.value != 0;
    }
    return NULL;
}

/* First pass: count pieces and read the specs (they may come after the pieces). */
static rlx_status read_header(pb b, spm_header *h) {
    *h = (spm_header){0, 1, 0, 1, 2, -1, true}; /* sentencepiece_model.proto defaults */
    pb_field f;
    while (b.p < b.end) {
        RLX_TRY(pb_next(&b, &f));
        if (f.wire != 2) continue;
        if (f.field == 1) {
            if (h->n_pieces == INT32_MAX) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: too many pieces", b.what);
            h->n_pieces++;
        } else if (f.field == 2) {
            RLX_TRY(read_trainer_spec(f.sub, h));
        } else if (f.field == 3) {
            RLX_TRY(read_normalizer_spec(f.sub, h));
        }
    }
    return NULL;
}

static rlx_status read_piece(rlx_tokenizer *t, uint32_t id, pb b) {
    const char *text = NULL;
    size_t len = 0;
    float score = 0;
    uint64_t type = RLX_TOKEN_TYPE_NORMAL;
    pb_field f;
    while (b.p < b.end) {
        RLX_TRY(pb_next(&b, &f));
        if (f.field == 1 && f.wire == 2) {
            text = (const char *)f.sub.p;
            len = (size_t)(f.sub.end - f.sub.p);
        } else if (f.field == 2 && f.wire == 5) {
            uint32_t bits = (uint32_t)f.value;
            memcpy(&score, &bits, sizeof score);
        } else if (f.field == 3 && f.wire == 0) {
            type = f.value;
        }
    }
    if (!text) return rlx_errorf(RLX_ERR_BAD_FILE, "%s: piece %" PRIu32 " has no text", b.what, id);
    uint8_t ty = type >= RLX_TOKEN_TYPE_NORMAL && type <= RLX_TOKEN_TYPE_BYTE ? (uint8_t)type : RLX_TOKEN_TYPE_UNDEFINED;
    return rlx_tok_vocab_set(&t->vocab, id, text, len, score, ty);
}

static rlx_status read_model(rlx_tokenizer *t, const uint8_t *data, size_t len) {
    pb b = {data, data + len, "tokenizer.model"};
    spm_header h;
    RLX_TRY(read_header(b, &h));
    if (h.model_type != 2)
        return rlx_errorf(RLX_ERR_UNSUPPORTED, "tokenizer.model: model_type %" PRId64 " (%s) is not supported (only BPE)",
                          h.model_type, h.model_type == 1 ? "unigram" : "word/char");
    if (h.n_pieces == 0) return rlx_errorf(RLX_ERR_BAD_FILE, "tokenizer.model: no pieces");
    RLX_TRY(rlx_tok_vocab_init(&t->vocab, h.n_pieces));
    pb_field f;
    for (uint32_t id = 0; b.p < b.end;) {
        RLX_TRY(pb_next(&b, &f));
        if (f.field == 1 && f.wire == 2) RLX_TRY(read_piece(t, id++, f.sub));
    }
    const struct {
        int64_t id;
        rlx_special which;
    } ids[] = {{h.unk, RLX_SPECIAL_UNK}, {h.bos, RLX_SPECIAL_BOS}, {h.eos, RLX_SPECIAL_EOS}, {h.pad, RLX_SPECIAL_PAD}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        t->special[ids[i].which] = ids[i].id >= 0 && ids[i].id < h.n_pieces ? (int32_t)ids[i].id : RLX_TOKEN_NULL;
    t->add_space_prefix = h.add_dummy_prefix;
    t->add_bos = t->special[RLX_SPECIAL_BOS] >= 0; /* llama.cpp's SPM default */
    return NULL;
}

rlx_status rlx_tok_load_spm_model(const char *path, const char *config_path, rlx_tokenizer **out) {
    char *data;
    size_t len;
    RLX_TRY(rlx_tok_read_file(path, &data, &len));
    rlx_tokenizer *t = NULL;
    rlx_status s = rlx_tok_new(RLX_TOKENIZER_SPM, &t);
    if (!s) s = read_model(t, (const uint8_t *)data, len);
    free(data);
    if (!s) s = rlx_tok_vocab_index(&t->vocab, "tokenizer.model");
    if (!s) s = rlx_tok_apply_hf_config(config_path, t);
    if (!s) s = rlx_tok_finish(t, "tokenizer.model");
    if (s) {
        rlx_tokenizer_close(t);
        return s;
    }
    *out = t;
    return NULL;
}
