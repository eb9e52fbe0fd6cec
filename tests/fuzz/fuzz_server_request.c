/* Fuzz target for rlx serve's request parsing (server/request.c): the input's first byte picks
 * the endpoint (chat or completions), the rest is the body. Any body must end in a validated
 * request or a 400 naming why, never a crash, a hang or a leak. A request that parses then has
 * its own text (the prompt, or the last message) run through its stop strings and the UTF-8
 * cleaner in pieces (server/text_out.c), which must give the same text as one piece and valid
 * UTF-8: the property that streamed deltas add up to the whole. Seeds: tests/corpus/server_request/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/request.h"
#include "server/text_out.h"

#define MAX_INPUT ((size_t)256 << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The text after stop strings and UTF-8 cleaning, pushed in pieces of `step` bytes. */
static rlx_srv_buf run(const rlx_srv_request *r, const char *text, size_t n, size_t step) {
    rlx_srv_stop stop = {.stops = r->stop, .n_stops = r->n_stop};
    rlx_srv_utf8 u = {0};
    rlx_srv_buf mid = {0}, out = {0};
    for (size_t at = 0; at < n && !stop.matched; at += step) {
        mid.len = 0;
        rlx_status s = rlx_srv_stop_push(&stop, text + at, at + step <= n ? step : n - at, &mid);
        if (!s) s = rlx_srv_utf8_push(&u, mid.data ? mid.data : "", mid.len, &out);
        if (s) abort(); /* only out of memory, which the fuzzer's bounds rule out */
    }
    mid.len = 0;
    if (rlx_srv_stop_finish(&stop, &mid) || rlx_srv_utf8_push(&u, mid.data ? mid.data : "", mid.len, &out) ||
        rlx_srv_utf8_finish(&u, &out) || rlx_srv_buf_append(&out, "", 0))
        abort();
    rlx_srv_stop_free(&stop);
    rlx_srv_buf_free(&mid);
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > MAX_INPUT) return 0;
    rlx_srv_kind kind = data[0] & 1 ? RLX_SRV_COMPLETION : RLX_SRV_CHAT;
    rlx_srv_request r;
    rlx_srv_error e;
    if (rlx_srv_request_parse(kind, (const char *)data + 1, size - 1, &r, &e)) {
        const char *text = r.prompt ? r.prompt : r.n_messages ? r.messages[r.n_messages - 1].content : "";
        size_t n = strlen(text);
        rlx_srv_buf whole = run(&r, text, n, n ? n : 1), split = run(&r, text, n, 3);
        if (whole.len != split.len || memcmp(whole.data, split.data, whole.len) ||
            !rlx_srv_utf8_valid(whole.data, whole.len))
            abort();
        rlx_srv_buf_free(&whole);
        rlx_srv_buf_free(&split);
    } else if (e.status != 400 && e.status != 500) {
        abort();
    }
    rlx_srv_request_free(&r);
    return 0;
}
