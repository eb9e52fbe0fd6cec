/* The on-disk VkPipelineCache ($XDG_CACHE_HOME/rlx/): a cold start writes it, a warm start loads it
 * and computes bitwise the same outputs, foreign or corrupt data is ignored (the Vulkan spec's
 * pipeline cache header must name this device), and RLX_VK_PIPELINE_CACHE=0 turns it off. Checked
 * on a small transformer-like graph at the backend level and on the embedded stories260K model
 * through the runner. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rlx/runner.h"
#include "runtime/vk_backend.h"
#include "test_util.h"
#include "test_vk_util.h"

#define D 64
#define ROWS 5
#define VOCAB 96

typedef struct result {
    float y[ROWS * VOCAB];
    rlx_vk_pipeline_stats stats;
} result;

/* embed -> rms_norm -> matmul -> rope -> kv_write/attention -> matmul -> softmax, run twice. */
static void run_graph(const rlx_weight *w, size_t nw, const rlx_vk_options *o, result *out) {
    rlx_backend *b = vkt_backend_with(o);
    rlx_graph *g = NULL;
    rlx_session *s = NULL;
    rlx_program *p = NULL;
    rlx_state_spec kv = {.n_layer = 1, .page_size = 1, .n_pages = 16, .n_head_kv = 2, .head_dim = 32};
    T_OK(rlx_graph_create(&g));
    rlx_node ids = rlx_input(g, "ids", RLX_DTYPE_I32, rlx_shape_make(1, (int64_t[]){ROWS}));
    rlx_node x = rlx_embed(g, rlx_weight_node(g, "emb", RLX_DTYPE_Q8_0, rlx_shape_make(2, (int64_t[]){VOCAB, D})), ids);
    x = rlx_rms_norm(g, x, rlx_weight_node(g, "norm", RLX_DTYPE_F32, rlx_shape_make(1, (int64_t[]){D})), 1e-6f);
    rlx_node q = rlx_matmul(g, x, rlx_weight_node(g, "wq", RLX_DTYPE_F16, rlx_shape_make(2, (int64_t[]){D, D})));
    rlx_shape heads = rlx_shape_make(3, (int64_t[]){ROWS, 2, 32});
    q = rlx_rope(g, rlx_reshape(g, q, heads), RLX_NO_NODE, (rlx_rope_attrs){RLX_ROPE_LAYOUT_NEOX, 32, 1e4f});
    rlx_node k = rlx_kv_write(g, rlx_kv_cache(g, 0, false, 16, 2, 32), q);
    rlx_node v = rlx_kv_write(g, rlx_kv_cache(g, 0, true, 16, 2, 32), rlx_reshape(g, x, heads));
    rlx_node a = rlx_reshape(g, rlx_attention(g, q, k, v, 0.17f, 0), rlx_shape_make(2, (int64_t[]){ROWS, D}));
    rlx_node y = rlx_matmul(g, a, rlx_weight_node(g, "emb", RLX_DTYPE_Q8_0, rlx_shape_make(2, (int64_t[]){VOCAB, D})));
    rlx_graph_mark_output(g, rlx_softmax(g, y), "p");
    int32_t id_data[ROWS] = {3, 95, 0, 17, 42};
    const void *in[1] = {id_data};
    void *outs[1] = {out->y};
    if (T_OK(b->ops->session_create(b, w, nw, &kv, &s)) && T_OK(b->ops->compile(s, g, &p))) {
        rlx_run_args args = {0, ROWS, in, outs, NULL};
        T_OK(b->ops->run(p, &args));
        args.n_past = ROWS; /* again, reading the first run's K/V */
        T_OK(b->ops->run(p, &args));
    }
    out->stats = rlx_vk_backend_pipeline_stats(b);
    if (p) b->ops->program_destroy(p);
    if (s) b->ops->session_destroy(s);
    rlx_graph_destroy(g);
    rlx_backend_destroy(b); /* writes the cache file */
}

static long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    closedir(d);
    rmdir(dir);
}

static void test_backend_level(void) {
    vkt_rng r = {77};
    rlx_weight w[3] = {vkt_weight(&r, "emb", RLX_DTYPE_Q8_0, 2, D, VOCAB, 1), vkt_weight(&r, "norm", RLX_DTYPE_F32, 1, D, 1, 1),
                       vkt_weight(&r, "wq", RLX_DTYPE_F16, 2, D, D, 1)};
    static result cold, warm, corrupt, off;
    rlx_vk_options env = vkt_options();
    run_graph(w, 3, &env, &cold);
    printf("cold: %u pipelines, %llu cache bytes loaded, file %s (%ld bytes)\n", cold.stats.pipelines,
           (unsigned long long)cold.stats.disk_bytes_loaded, cold.stats.path, file_size(cold.stats.path));
    T_CHECK(cold.stats.disk_cache && cold.stats.disk_bytes_loaded == 0, "cold start loaded %llu bytes",
            (unsigned long long)cold.stats.disk_bytes_loaded);
    T_CHECK(strstr(cold.stats.path, getenv("XDG_CACHE_HOME")) != NULL, "cache path %s is not under XDG_CACHE_HOME",
            cold.stats.path);
    long size = file_size(cold.stats.path);
    T_CHECK(size >= 32, "no cache file written at %s (size %ld)", cold.stats.path, size);

    run_graph(w, 3, &env, &warm);
    printf("warm: %u pipelines, %llu cache bytes loaded\n", warm.stats.pipelines,
           (unsigned long long)warm.stats.disk_bytes_loaded);
    T_CHECK((long)warm.stats.disk_bytes_loaded == size, "warm start loaded %llu bytes of a %ld-byte file",
            (unsigned long long)warm.stats.disk_bytes_loaded, size);
    T_CHECK(memcmp(cold.y, warm.y, sizeof cold.y) == 0, "cold and warm outputs differ");

    FILE *f = fopen(cold.stats.path, "wb");
    if (f) {
        fputs("definitely not a pipeline cache, but at least thirty-two bytes long", f);
        fclose(f);
    }
    run_graph(w, 3, &env, &corrupt);
    T_CHECK(corrupt.stats.disk_bytes_loaded == 0, "a corrupt cache file was accepted (%llu bytes)",
            (unsigned long long)corrupt.stats.disk_bytes_loaded);
    T_CHECK(memcmp(cold.y, corrupt.y, sizeof cold.y) == 0, "outputs after a corrupt cache differ");

    rlx_vk_options no_cache = env;
    no_cache.pipeline_cache = false;
    run_graph(w, 3, &no_cache, &off);
    T_CHECK(!off.stats.disk_cache && off.stats.disk_bytes_loaded == 0, "RLX_VK_PIPELINE_CACHE=0 still used %s",
            off.stats.path);
    T_CHECK(memcmp(cold.y, off.y, sizeof cold.y) == 0, "outputs without a disk cache differ");
    for (int i = 0; i < 3; i++) vkt_weight_free(&w[i]);
}

/* Cold and warm runner starts on a real model give bitwise identical logits. */
static void test_runner_level(const char *dir) {
    const int32_t ids[] = {1, 403, 407, 261, 378};
    static float logits[2][512];
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/runner", dir);
    setenv("XDG_CACHE_HOME", cache, 1);
    for (int k = 0; k < 2; k++) {
        rlx_runner_opts o = rlx_runner_opts_default();
        o.backend = "vulkan";
        o.n_ctx = 64;
        rlx_runner *r = NULL;
        if (!T_OK(rlx_runner_open(t_source_path("models/stories260K.gguf"), &o, &r))) return;
        T_CHECK(rlx_runner_vocab_size(r) == 512, "stories260K vocab %d", rlx_runner_vocab_size(r));
        T_OK(rlx_runner_predict_logits(r, ids, 5, logits[k]));
        rlx_runner_close(r);
    }
    T_CHECK(memcmp(logits[0], logits[1], sizeof logits[0]) == 0, "stories260K logits differ between cold and warm");
    printf("stories260K: cold and warm logits %s\n", memcmp(logits[0], logits[1], sizeof logits[0]) ? "differ" : "identical");
}

int main(void) {
    char dir[] = "/tmp/rlx-vk-cache-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    setenv("XDG_CACHE_HOME", dir, 1);
    rlx_backend_destroy(vkt_backend()); /* skips here without a device */
    test_backend_level();
    test_runner_level(dir);
    remove_tree(dir);
    vkt_check_validation();
    return t_summary("test_vk_cache");
}
