/* Streaming detokenizer: turns ids into text one token at a time, holding back a UTF-8 sequence
 * cut between tokens (an emoji spelled as four <0xNN> byte tokens, or one character split across
 * two byte-level BPE tokens) until it is complete. Only a tail that could still become valid is
 * held; everything else passes through as is, so the output is exactly rlx_tokenizer_decode's. */
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer/tokenizer.h"
#include "text/tokenizer/tokenizer_utf8.h"

struct rlx_detokenizer {
    const rlx_tokenizer *tok; /* borrowed */
    unsigned flags;
    bool at_start;
    rlx_tok_buf out; /* owned: the bytes returned by the last call, then the held-back tail */
    size_t held;     /* bytes at the end of out that are held back */
};

rlx_status rlx_detokenizer_create(const rlx_tokenizer *t, unsigned flags, rlx_detokenizer **out) {
    if (!t || !out) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_detokenizer_create: NULL tokenizer or out");
    rlx_detokenizer *d = calloc(1, sizeof *d);
    if (!d) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "detokenizer: out of memory");
    d->tok = t;
    d->flags = flags;
    d->at_start = true;
    *out = d;
    return NULL;
}

/* Moves the held-back tail to the front of the buffer. */
static void keep_only_held(rlx_detokenizer *d) {
    if (d->held && d->out.len > d->held) memmove(d->out.p, d->out.p + d->out.len - d->held, d->held);
    d->out.len = d->held;
}

rlx_status rlx_detokenizer_push(rlx_detokenizer *d, int32_t id, const char **text, size_t *len) {
    if (!d || !text || !len) return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "rlx_detokenizer_push: NULL argument");
    const char *p;
    size_t n;
    RLX_TRY(rlx_tok_decode_piece(d->tok, id, d->flags, &d->at_start, &p, &n));
    keep_only_held(d);
    RLX_TRY(rlx_tok_buf_append(&d->out, p, n));
    d->held = rlx_utf8_incomplete_tail(d->out.p, d->out.len);
    *text = d->out.p ? d->out.p : "";
    *len = d->out.len - d->held;
    return NULL;
}

void rlx_detokenizer_finish(rlx_detokenizer *d, const char **text, size_t *len) {
    keep_only_held(d);
    d->held = 0;
    d->at_start = true;
    *text = d->out.p ? d->out.p : "";
    *len = d->out.len;
}

void rlx_detokenizer_destroy(rlx_detokenizer *d) {
    if (!d) return;
    rlx_tok_buf_free(&d->out);
    free(d);
}
