/* Bad input to the runner API gives a clear error (the right code, a message naming the problem),
 * never a crash: out-of-range and negative token ids, empty prompts, n_new = 0, prompts longer than
 * the context, decode without a prefill or past the context, invalid sampling options, a missing
 * file, a truncated GGUF, and a GGUF whose tensors do not match its metadata.
 *
 *   test_runner_errors             on models/stories260K.gguf (in the repo: always runs)
 *   test_runner_errors FIXTURE     the file checks on a fixture GGUF as well (e.g. a quantized one)
 *
 * The expected behaviour comes from include/rlx/runner.h and DESIGN.md ("Bad input"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rlx/runner.h"
#include "test_util.h"

/* The CPU reference backend unless RLX_TEST_BACKEND names another: the tolerances here are those
 * of f32 compute on the CPU. */
static const char *test_backend(void) {
    const char *b = getenv("RLX_TEST_BACKEND");
    return b && *b ? b : "cpu";
}

static void check_token_errors(rlx_runner *r) {
    int32_t v = rlx_runner_vocab_size(r);
    float *logits = malloc((size_t)v * sizeof *logits);
    int32_t out[4], n_out = 0;
    char vs[32];
    snprintf(vs, sizeof vs, "%d", v);
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    const int32_t too_big[3] = {1, v, 2}, negative[2] = {1, -1}, ok[2] = {1, 2};

    T_ERR(rlx_runner_predict_logits(r, too_big, 3, logits), RLX_ERR_INVALID_ARGUMENT, vs);
    T_ERR(rlx_runner_predict_all_logits(r, too_big, 3, logits), RLX_ERR_INVALID_ARGUMENT, vs);
    T_ERR(rlx_runner_generate(r, too_big, 3, 2, &greedy, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, vs);
    T_ERR(rlx_runner_prefill_get_last_logits(r, too_big, 3, logits), RLX_ERR_INVALID_ARGUMENT, vs);
    T_ERR(rlx_runner_predict_logits(r, negative, 2, logits), RLX_ERR_INVALID_ARGUMENT, "-1");
    T_ERR(rlx_runner_generate(r, negative, 2, 2, &greedy, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, "-1");

    T_ERR(rlx_runner_predict_logits(r, ok, 0, logits), RLX_ERR_INVALID_ARGUMENT, "empty");
    T_ERR(rlx_runner_generate(r, ok, 0, 2, &greedy, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, "empty");
    T_ERR(rlx_runner_prefill_get_last_logits(r, ok, 0, logits), RLX_ERR_INVALID_ARGUMENT, "empty");
    T_ERR(rlx_runner_generate(r, ok, 2, 0, &greedy, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, "n_new");

    /* decode: a bad id after a good prefill, which must leave the state usable */
    if (T_OK(rlx_runner_prefill_get_last_logits(r, ok, 2, logits))) {
        T_ERR(rlx_runner_decode_get_logits(r, v, logits), RLX_ERR_INVALID_ARGUMENT, vs);
        T_ERR(rlx_runner_decode_get_logits(r, -5, logits), RLX_ERR_INVALID_ARGUMENT, "-5");
        T_CHECK(rlx_runner_n_past(r) == 2, "a rejected decode changed n_past to %d", rlx_runner_n_past(r));
        T_OK(rlx_runner_decode_get_logits(r, 3, logits));
    }

    rlx_sample_opts bad = rlx_sample_opts_greedy();
    bad.top_p = 2.0f;
    T_ERR(rlx_runner_generate(r, ok, 2, 2, &bad, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, "top_p");
    bad = rlx_sample_opts_greedy();
    bad.top_k = -3;
    T_ERR(rlx_runner_generate(r, ok, 2, 2, &bad, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT, "top_k");
    free(logits);
    printf("token ids >= vocab (%d) and negative, empty prompts, n_new = 0, bad sampling options: rejected\n", v);
}

/* A runner with n_ctx = 8: prompts and generations past it are refused, decode stops at the edge. */
static void check_context_errors(const char *path) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = test_backend();
    o.n_ctx = 8;
    rlx_runner *r = NULL;
    if (!T_OK(rlx_runner_open(path, &o, &r))) return;
    T_CHECK(rlx_runner_n_ctx(r) == 8, "n_ctx is %d, asked for 8", rlx_runner_n_ctx(r));
    int32_t v = rlx_runner_vocab_size(r), ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out[8], n_out = 0;
    float *logits = malloc((size_t)v * sizeof *logits);
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    T_ERR(rlx_runner_predict_logits(r, ids, 9, logits), RLX_ERR_INVALID_ARGUMENT, "context");
    T_ERR(rlx_runner_prefill_get_last_logits(r, ids, 9, logits), RLX_ERR_INVALID_ARGUMENT, "context");
    T_ERR(rlx_runner_generate(r, ids, 9, 1, &greedy, NULL, NULL, out, &n_out), RLX_ERR_INVALID_ARGUMENT,
          "context");
    /* 6 + 3 > 8: refused up front, or stopped with an error once full; never silently truncated */
    n_out = 0;
    rlx_status s = rlx_runner_generate(r, ids, 6, 3, &greedy, NULL, NULL, out, &n_out);
    T_CHECK(s != NULL && rlx_status_code(s) == RLX_ERR_INVALID_ARGUMENT && n_out <= 2,
            "prompt 6 + n_new 3 in a context of 8: got '%s' with %d ids, expected an error", rlx_status_message(s),
            n_out);
    rlx_status_free(s);
    T_OK(rlx_runner_generate(r, ids, 6, 2, &greedy, NULL, NULL, out, &n_out));
    /* decode before any prefill, then past the end of the context */
    rlx_runner *fresh = NULL;
    if (T_OK(rlx_runner_open(path, &o, &fresh))) {
        T_ERR(rlx_runner_decode_get_logits(fresh, 1, logits), RLX_ERR_INVALID_ARGUMENT, "");
        rlx_runner_close(fresh);
    }
    if (T_OK(rlx_runner_prefill_get_last_logits(r, ids, 8, logits)))
        T_ERR(rlx_runner_decode_get_logits(r, 1, logits), RLX_ERR_INVALID_ARGUMENT, "context");
    free(logits);
    rlx_runner_close(r);
    printf("n_ctx 8: prompts of 9, prompt 6 + 3 new, decode with no state and past the context: rejected\n");
}

static bool nonnull(const void *p, const char *what) {
    T_CHECK(p != NULL, "%s: could not be read or created", what);
    return p != NULL;
}

/* Writes bytes to a fresh temp file; returns its path in a static buffer, or NULL. */
static const char *write_temp(const unsigned char *data, size_t n) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/rlx_test_runner_errors_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    bool ok = write(fd, data, n) == (ssize_t)n;
    close(fd);
    return ok ? path : NULL;
}

static size_t find_bytes(const unsigned char *hay, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(hay + i, needle, k)) return i;
    return SIZE_MAX;
}

static bool open_fails(const char *what, const char *path, rlx_code code) {
    rlx_runner *r = NULL;
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = test_backend();
    rlx_status s = rlx_runner_open(path, &o, &r);
    T_CHECK(s != NULL && r == NULL, "%s: rlx_runner_open succeeded", what);
    if (!s) {
        rlx_runner_close(r);
        return false;
    }
    T_CHECK(rlx_status_code(s) == code && strlen(rlx_status_message(s)) > 10, "%s: expected %s, got %s: %s", what,
            rlx_code_name(code), rlx_code_name(rlx_status_code(s)), rlx_status_message(s));
    printf("%s -> %s: %s\n", what, rlx_code_name(rlx_status_code(s)), rlx_status_message(s));
    rlx_status_free(s);
    return true;
}

/* GGUF metadata: key = u64 length + bytes, then a u32 value type, then the value
 * (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md). Doubles <arch>.embedding_length so
 * the tensors no longer match it. */
static void check_bad_files(const char *path, const char *arch) {
    size_t n = 0;
    unsigned char *buf = t_read_file(path, &n);
    if (!nonnull(buf, path)) return;
    char key[64];
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    size_t at = find_bytes(buf, n, key);
    T_CHECK(at != SIZE_MAX, "%s: key %s not found", path, key);
    if (at != SIZE_MAX && at + strlen(key) + 12 <= n) {
        unsigned char *type = buf + at + strlen(key), *value = type + 4;
        T_CHECK(type[0] == 4 || type[0] == 10, "%s: %s has type %d, expected UINT32 (4) or UINT64 (10)", path, key,
                type[0]);
        /* little-endian: doubling the low bytes is enough for any sane width */
        uint32_t old = (uint32_t)value[0] | (uint32_t)value[1] << 8 | (uint32_t)value[2] << 16;
        uint32_t twice = old * 2;
        value[0] = (unsigned char)twice;
        value[1] = (unsigned char)(twice >> 8);
        value[2] = (unsigned char)(twice >> 16);
        const char *tmp = write_temp(buf, n);
        char what[160];
        snprintf(what, sizeof what, "%s = %u (was %u)", key, twice, old);
        if (nonnull(tmp, "temp file")) {
            open_fails(what, tmp, RLX_ERR_BAD_FILE);
            unlink(tmp);
        }
    }
    /* the same file cut in half: its tensor data runs past the end */
    const char *tmp = write_temp(buf, n / 2);
    if (nonnull(tmp, "temp file")) {
        open_fails("GGUF truncated to half its size", tmp, RLX_ERR_BAD_FILE);
        unlink(tmp);
    }
    free(buf);
}

int main(int argc, char **argv) {
    const char *path = t_source_path("models/stories260K.gguf");
    const char *arch = "llama";
    if (argc > 1) {
        t_require_fixture(argv[1]);
        path = t_fixture(argv[1]);
        arch = argc > 2 ? argv[2] : "qwen3";
    }
    printf("model: %s\n", path);
    rlx_runner *r = NULL;
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = test_backend();
    if (T_OK(rlx_runner_open(path, &o, &r))) {
        check_token_errors(r);
        rlx_runner_close(r);
    }
    check_context_errors(path);
    /* include/rlx/runner.h: decode_ahead is 0 (the default) to 64 */
    const int32_t bad_ahead[] = {-1, 65};
    for (int i = 0; i < 2; i++) {
        rlx_runner_opts a = o;
        a.decode_ahead = bad_ahead[i];
        r = NULL;
        T_ERR(rlx_runner_open(path, &a, &r), RLX_ERR_INVALID_ARGUMENT, "decode_ahead");
        T_CHECK(r == NULL, "decode_ahead %d: open failed but returned a runner", (int)bad_ahead[i]);
    }
    open_fails("missing file", "/nonexistent/rlx/model.gguf", RLX_ERR_NOT_FOUND);
    check_bad_files(path, arch);
    return t_summary("test_runner_errors");
}
