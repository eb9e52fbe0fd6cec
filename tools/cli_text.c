#include "cli_text.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "default_model.h"

rlx_status rlx_cli_default_model(const char **out) {
    const char *env = getenv("RLX_DEFAULT_MODEL");
    if (env && *env) {
        *out = env;
        return NULL;
    }
    return rlx_default_model_path(out);
}

typedef struct {
    const char *path;
    atomic_bool done;
    double t0;
} load_progress;

static void *show_progress(void *arg) {
    load_progress *p = arg;
    const struct timespec tick = {0, 100 * 1000 * 1000};
    bool shown = false;
    for (int i = 0; !atomic_load(&p->done); i++) {
        nanosleep(&tick, NULL);
        double t = rlx_cli_now() - p->t0;
        if (t < 1.0 || atomic_load(&p->done)) continue;
        char bar[] = "[          ]";
        int pos = i % 18, at = pos < 9 ? pos : 17 - pos; /* to and fro over 10 cells */
        bar[1 + at] = '=';
        bar[2 + at] = '=';
        fprintf(stderr, "\rloading %s %s %.1f s", p->path, bar, t);
        shown = true;
    }
    if (shown) fputs("\r\033[K", stderr); /* clear the line */
    return NULL;
}

rlx_status rlx_cli_open_runner(const char *path, const rlx_runner_opts *opts, rlx_runner **out) {
    load_progress p = {.path = path, .t0 = rlx_cli_now()};
    pthread_t thread;
    bool started = isatty(STDERR_FILENO) && pthread_create(&thread, NULL, show_progress, &p) == 0;
    rlx_status s = rlx_runner_open(path, opts, out);
    atomic_store(&p.done, true);
    if (started) pthread_join(thread, NULL);
    return s;
}

rlx_status rlx_cli_stream_init(rlx_cli_stream *s, const rlx_tokenizer *tok, FILE *out) {
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->out = out;
    /* generated text continues the prompt: keep SentencePiece's leading space */
    return rlx_detokenizer_create(tok, RLX_DECODE_CONTINUE, &s->detok);
}

static bool keep(rlx_cli_stream *s, const char *text, size_t len) {
    if (s->len + len + 1 > s->cap) {
        size_t cap = (s->len + len + 1) * 2;
        char *p = realloc(s->text, cap);
        if (!p) return false;
        s->text = p;
        s->cap = cap;
    }
    memcpy(s->text + s->len, text, len);
    s->len += len;
    s->text[s->len] = '\0';
    return true;
}

bool rlx_cli_stream_on_token(int32_t token, void *user) {
    rlx_cli_stream *s = user;
    if (s->n++ == 0) s->t_first = rlx_cli_now();
    if (!s->ignore_eog && rlx_tokenizer_is_eog(s->tok, token)) {
        s->stopped_at_eog = true;
        return false;
    }
    const char *text;
    size_t len;
    rlx_status st = rlx_detokenizer_push(s->detok, token, &text, &len);
    if (st) {
        /* the runner validated the id against the model; a smaller vocabulary would land here */
        fprintf(stderr, "\n%s\n", rlx_status_message(st));
        rlx_status_free(st);
        return false;
    }
    fwrite(text, 1, len, s->out);
    fflush(s->out);
    if (!keep(s, text, len)) return false;
    return !(s->interrupt && *s->interrupt);
}

rlx_status rlx_cli_stream_finish(rlx_cli_stream *s) {
    const char *text;
    size_t len;
    rlx_detokenizer_finish(s->detok, &text, &len);
    fwrite(text, 1, len, s->out);
    fflush(s->out);
    if (!keep(s, text, len)) return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "reply text of %zu bytes", s->len + len);
    return NULL;
}

void rlx_cli_stream_destroy(rlx_cli_stream *s) {
    rlx_detokenizer_destroy(s->detok);
    free(s->text);
    memset(s, 0, sizeof *s);
}

void rlx_cli_stream_report(const rlx_cli_stream *s, const char *cmd, const rlx_runner *r, int32_t n_prompt,
                           double t_end) {
    if (s->n == 0) return;
    double prefill = s->t_first - s->t_start, decode = t_end - s->t_first;
    fprintf(stderr, "rlx %s: %s on %s\n", cmd, rlx_runner_family(r), rlx_runner_backend_name(r));
    fprintf(stderr, "  prefill: %d tokens in %.2f ms, %.1f tokens/s (time to first token)\n", n_prompt,
            prefill * 1e3, prefill > 0 ? n_prompt / prefill : 0.0);
    if (s->n > 1)
        fprintf(stderr, "  decode:  %d tokens in %.2f ms, %.1f tokens/s\n", s->n - 1, decode * 1e3,
                decode > 0 ? (s->n - 1) / decode : 0.0);
}

rlx_status rlx_cli_tokenize_prompt(const rlx_tokenizer *tok, const char *text, bool add_bos, bool parse_special,
                                   int32_t **ids, int32_t *n) {
    unsigned flags = parse_special ? RLX_ENCODE_PARSE_SPECIAL : 0;
    int32_t bos = rlx_tokenizer_special(tok, RLX_SPECIAL_BOS);
    size_t bos_len = 0;
    const char *bos_text = bos != RLX_TOKEN_NULL ? rlx_tokenizer_piece(tok, bos, &bos_len) : NULL;
    bool has_bos = parse_special && bos_text && bos_len && !strncmp(text, bos_text, bos_len);
    if (add_bos && !has_bos) flags |= RLX_ENCODE_ADD_SPECIAL;
    size_t count = 0;
    RLX_TRY(rlx_tokenizer_encode(tok, text, strlen(text), flags, ids, &count));
    if (count > INT32_MAX) {
        free(*ids);
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "prompt of %zu tokens is too long", count);
    }
    *n = (int32_t)count;
    return NULL;
}
