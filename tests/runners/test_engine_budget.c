/* The engine's default KV budget (runners/engine.c default_budget, docs/ARCHITECTURE.md), with the
 * CPU backend behind a wrapper whose memory_room reports a device of a chosen size: the rule is
 * stated in whole pages, so each expected page count is computed here from the model's shapes and
 * the rule's words, not from the engine.
 *   - no room (the CPU's NULL, or RLX_ERR_UNSUPPORTED): the host pool, 4 full contexts within 512 MiB;
 *   - a device: half of (free - weights - 1 GiB); with max_parallel, at most that many full contexts
 *     plus one page; never less than the host pool; one layer's K or V pool within max_buffer. */
#include <stdio.h>
#include <string.h>

#include "ir/backend.h"
#include "loader/format/model.h"
#include "runners/backend_select.h"
#include "runners/engine_internal.h"
#include "runners/family.h"
#include "test_util.h"

#define N_CTX 256
#define PAGE 16

static rlx_backend_room g_room;
static bool g_refuse;

static rlx_status fake_room(rlx_backend *b, rlx_backend_room *out) {
    (void)b;
    if (g_refuse) return rlx_errorf(RLX_ERR_UNSUPPORTED, "host memory");
    *out = g_room;
    return NULL;
}

static int32_t pages_with(const rlx_model *m, const rlx_family_ops *fam, rlx_backend *b, int32_t max_parallel) {
    rlx_engine_opts o = rlx_engine_opts_default();
    o.model.n_ctx = N_CTX;
    o.max_parallel = max_parallel;
    rlx_engine *e = NULL;
    if (!T_OK(rlx_engine_create(m, fam, b, &o, 0, &e))) return -1;
    int32_t n = rlx_engine_get_stats(e).n_pages;
    rlx_engine_close(e);
    return n;
}

int main(void) {
    rlx_model *m = NULL;
    const rlx_family_ops *fam = NULL;
    rlx_backend *cpu = NULL;
    rlx_backend_opts bo = {0};
    if (!T_OK(rlx_model_open(t_source_path("models/stories260K.gguf"), &m)) ||
        !T_OK(rlx_family_ops_find(m->config.family, &fam)) ||
        !T_OK(rlx_backend_select_opts("cpu", NULL, 1, &bo, &cpu)))
        return t_summary("test_engine_budget");
    const rlx_model_config *c = &m->config;
    int64_t dim = c->head_dim > c->head_dim_v ? c->head_dim : c->head_dim_v;
    int64_t layer_page = (int64_t)PAGE * c->n_head_kv * dim * 4; /* one layer's K (or V) page, F32 */
    int64_t per_page = (int64_t)PAGE * c->n_head_kv * (c->head_dim + c->head_dim_v) * 4 * c->n_layer;
    int64_t weights = 0, ctx_pages = N_CTX / PAGE, gib = (int64_t)1 << 30;
    for (size_t i = 0; i < m->n_weights; i++) weights += (int64_t)m->weights[i].nbytes;
    int64_t host = 4 * ctx_pages; /* 4 contexts of this tiny model are far below 512 MiB */

    /* the CPU backend itself, its ops table swapped for a copy that can report a device */
    const rlx_backend_ops *cpu_ops = cpu->ops;
    rlx_backend_ops ops = *cpu_ops;
    cpu->ops = &ops;
    T_CHECK(pages_with(m, fam, cpu, 0) == host, "the CPU (no memory_room): %lld pages expected", (long long)host);
    ops.memory_room = fake_room;
    g_refuse = true;
    T_CHECK(pages_with(m, fam, cpu, 0) == host, "memory_room refused: the host pool, %lld pages", (long long)host);
    g_refuse = false;
    /* room for 1,000 pages in the device's half, plus a few bytes that make no page */
    g_room = (rlx_backend_room){weights + gib + 2 * (1000 * per_page + 5), INT64_MAX};
    int32_t n = pages_with(m, fam, cpu, 0);
    T_CHECK(n == 1000, "unbounded parallelism: half the device's room, 1000 pages expected, got %d", n);
    n = pages_with(m, fam, cpu, 8);
    T_CHECK(n == 8 * ctx_pages + 1, "max_parallel 8: 8 contexts + 1 page = %lld pages expected, got %d",
            (long long)(8 * ctx_pages + 1), n);
    n = pages_with(m, fam, cpu, 2);
    T_CHECK(n == host, "max_parallel 2: 2 contexts are below the host pool, %lld pages expected, got %d",
            (long long)host, n);
    g_room.max_buffer = 300 * layer_page + layer_page / 2;
    n = pages_with(m, fam, cpu, 0);
    T_CHECK(n == 300, "one layer's pool within max_buffer: 300 pages expected, got %d", n);
    g_room = (rlx_backend_room){weights / 2, INT64_MAX}; /* less than the weights */
    n = pages_with(m, fam, cpu, 0);
    T_CHECK(n == host, "a device without room: the host pool, %lld pages expected, got %d", (long long)host, n);
    printf("  default KV pool: host %lld pages; device share, max_parallel bound, buffer cap and floor hold\n",
           (long long)host);
    cpu->ops = cpu_ops;
    rlx_backend_destroy(cpu);
    rlx_model_close(m);
    return t_summary("test_engine_budget");
}
