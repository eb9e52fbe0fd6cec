/* Resource limits on the CPU backend: a context too large for host memory is refused up front, by
 * rlx_runner_open, with RLX_ERR_OUT_OF_MEMORY naming the bytes needed and the bytes available, and
 * `rlx run` / `rlx generate --ctx N` print that on one line and exit 1. "Up front" is proven by the
 * sanitized build: ASan aborts on an allocation it cannot serve, so reaching the allocation would
 * crash this test there.
 *
 * Expected bytes: the formula, KV bytes = 2 * n_layer * rows * n_head_kv * head_dim * 4
 * (f32 K and V) over the pool's rows (the context in pages of 16, plus one page), with stories260K's shape from the fixtures README: 5 layers, dim 64, 8 heads and
 * 4 KV heads, so head_dim 8.
 *
 * Usage: test_resource_limits RLX_BINARY */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_fallback/host_memory.h"
#include "rlx/runner.h"
#include "test_stories.h"
#include "test_util.h"

/* Every case runs the CPU backend on one thread. */
static rlx_runner_opts cpu_opts(int32_t n_ctx) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = "cpu";
    o.n_threads = 1;
    o.n_ctx = n_ctx;
    return o;
}

static void refused_by_runner(const char *model, int32_t n_ctx) {
    rlx_runner_opts o = cpu_opts(n_ctx);
    rlx_runner *r = NULL;
    char needed[64];
    uint64_t kv = t_stories_kv_bytes(t_stories_pool_rows((uint64_t)n_ctx), 4); /* the CPU keeps F32 */
    snprintf(needed, sizeof needed, "needs %" PRIu64 " bytes", kv);
    rlx_status s = rlx_runner_open(model, &o, &r);
    printf("n_ctx %d: expected a refusal '%s ... available'; got: %s\n", (int)n_ctx, needed,
           s ? rlx_status_message(s) : "(opened)");
    T_CHECK(s && strstr(rlx_status_message(s), "available"), "n_ctx %d: the error names no available bytes",
            (int)n_ctx);
    T_ERR(s, RLX_ERR_OUT_OF_MEMORY, needed);
    T_CHECK(r == NULL, "n_ctx %d: a refused open still set *out", (int)n_ctx);
    rlx_runner_close(r);
}

/* The CLI: exit status 1 and one line on stderr naming needed and available bytes. */
static void refused_by_cli(const char *rlx, const char *model, const char *cmd, const char *ctx) {
    const char *run[] = {rlx, "run", "-m", model, "-n", "2", "--seed", "0", "--backend", "cpu", "--ctx", ctx, NULL};
    const char *gen[] = {rlx, "generate", "-m", model, "--tokens", "1", "-n", "1", "--backend", "cpu", "--ctx",
                         ctx, NULL};
    t_cli_result res;
    if (!t_run_cli(!strcmp(cmd, "run") ? run : gen, NULL, 20, &res)) return;
    printf("rlx %s --ctx %s: exit %d, stderr: %s", cmd, ctx, res.status, res.err);
    T_CHECK(res.status == 1, "rlx %s --ctx %s: expected exit status 1", cmd, ctx);
    T_CHECK(res.lines == 1 && res.len > 0 && res.err[res.len - 1] == '\n',
            "rlx %s --ctx %s: expected one line on stderr, got %d", cmd, ctx, res.lines);
    T_CHECK(strstr(res.err, "needs") && strstr(res.err, "available"),
            "rlx %s --ctx %s: the error names no needed/available", cmd, ctx);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s RLX_BINARY\n", argv[0]);
        return 2;
    }
    const char *model = t_source_path("models/stories260K.gguf");
    uint64_t avail = rlx_host_memory_available();
    printf("host memory available: %" PRIu64 " bytes\n", avail);
    T_CHECK(avail > 0, "the available host memory is unknown");
    /* the largest context an int32 holds needs 2.7 TB; 2^30 tokens 1.4 TB */
    refused_by_runner(model, INT32_MAX);
    refused_by_runner(model, 1 << 30);
    rlx_runner_opts o = cpu_opts(2048);
    t_stories_generates(model, &o);
    refused_by_cli(argv[1], model, "run", "2147483647");
    refused_by_cli(argv[1], model, "generate", "1073741824");
    return t_summary("test_resource_limits");
}
