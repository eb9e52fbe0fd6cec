/* The knobs' parsing (runtime/vk_options.h, rlx_vk_options_from_env) and checking. Expectations
 * from the ranges docs/ARCHITECTURE.md and runtime/vk_backend.h document for each knob (a power of
 * two in a range; RLX_VK_WARM, RLX_VK_MOE_GROUPED, RLX_VK_MATMUL_BATCH and RLX_VK_DETERMINISTIC 0 or 1;
 * RLX_VK_WAIT poll or block; RLX_VK_PLANS device or gpu;
 * RLX_VK_WARM_NEXT a whole number of KiB up to 1048576; RLX_VK_MAX_BINDING_BYTES a whole number
 * from 4096; RLX_VK_COOPMAT one of its five modes; RLX_VK_FAULT kind:N with N >= 1):
 *   - a set value outside them (not a number, junk after the digits, not a power of two, out of
 *     range) makes rlx_vk_options_from_env and backend creation fail with RLX_ERR_INVALID_ARGUMENT,
 *     naming the knob and value;
 *   - set after the backend exists, it does not reach that backend: knobs are read at creation;
 *   - the range's ends and an empty value are accepted: a compile with them succeeds (a decode-sized
 *     matmul, which the matvec planner reads the knobs for);
 *   - options set in code outside those ranges are refused by the backend, naming the variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/vk_backend.h"
#include "test_util.h"
#include "test_vk_util.h"

typedef struct knob_case {
    const char *name;
    const char *bad[4];
    const char *good[2];
} knob_case;

static const knob_case cases[] = {
    {"RLX_VK_MATVEC_R", {"3", "16", "two", "4x"}, {"1", "8"}},
    {"RLX_VK_MATVEC_WG", {"48", "2048", "-32", " 64"}, {"32", "1024"}},
    {"RLX_VK_MATVEC_TRIPS", {"0", "128", "1.5", "3"}, {"1", "64"}},
    {"RLX_VK_MATVEC_MIN_GROUPS", {"131072", "100", "0", "x"}, {"1", "65536"}},
    {"RLX_VK_MATVEC_NX", {"16", "0", "6", "99999999999999999999"}, {"1", "8"}},
    {"RLX_VK_MATVEC_UNR", {"16", "6", "0", "2 "}, {"1", "8"}},
    {"RLX_VK_ATTN_GW", {"8", "3", "0", "one"}, {"1", "4"}},
    {"RLX_VK_ATTN_SPLIT_KEYS", {"8", "100", "8192", "x"}, {"16", "4096"}},
    {"RLX_VK_ATTN_BATCH_SPLITS", {"32", "3", "0", "x"}, {"1", "16"}},
    {"RLX_VK_ATTN_KB", {"32", "3", "0", "x"}, {"1", "16"}},
    {"RLX_VK_ATTN_LPK", {"128", "12", "0", "x"}, {"1", "64"}},
    {"RLX_VK_ATTN_WG", {"16", "2048", "96", "x"}, {"32", "1024"}},
    {"RLX_VK_COOPMAT_TM", {"32", "256", "96", "0"}, {"64", "128"}},
    {"RLX_VK_COOPMAT_TN", {"32", "256", "96", "0"}, {"64", "128"}},
    {"RLX_VK_COOPMAT_DEPTH", {"8", "3", "0", "deep"}, {"1", "4"}},
    {"RLX_VK_COOPMAT_BK", {"16", "256", "96", "0"}, {"32", "128"}},
    {"RLX_VK_COOPMAT_SPLIT", {"128", "3", "0", "x"}, {"1", "64"}},
    {"RLX_VK_COOPMAT_GROUPS", {"131072", "300", "0", "many"}, {"1", "65536"}},
    {"RLX_VK_TILED_MIN_ROWS", {"1024", "24", "0", "-1"}, {"1", "512"}},
    {"RLX_VK_MOE_TM", {"8", "128", "48", "x"}, {"16", "64"}},
    {"RLX_VK_MOE_GROUPED", {"2", "yes", "on", "-1"}, {"0", "1"}},
    {"RLX_VK_MATMUL_BATCH", {"2", "yes", "on", "-1"}, {"0", "1"}},
    {"RLX_VK_WARM", {"2", "yes", "on", "-1"}, {"0", "1"}},
    {"RLX_VK_WARM_NEXT", {"1048577", "-1", "3M", "2.5"}, {"0", "1048576"}},
    {"RLX_VK_WAIT", {"spin", "1", "Poll", "poll "}, {"poll", "block"}},
    {"RLX_VK_PLANS", {"cpu", "GPU", "1", "gpu "}, {"device", "gpu"}},
    {"RLX_VK_DETERMINISTIC", {"2", "yes", "on", "1 "}, {"0", "1"}},
    {"RLX_VK_MAX_BINDING_BYTES", {"4095", "0", "64k", "1e9"}, {"4096", "18446744073709551615"}},
    {"RLX_VK_COOPMAT", {"fast", "MIXED", "1", "exact "}, {"mixed", "exact"}},
    {"RLX_VK_FAULT", {"oom", "oom:0", "lost:x", "crash:1"}, {"oom:1000000", "lost-wait:1000000"}},
};

#define N_CASES (sizeof cases / sizeof cases[0])

/* A one-row F16 matmul: the decode matvec, planned with every matvec knob. */
static rlx_status compile_matvec(rlx_backend *b) {
    vkt_rng r = {7};
    vkt_graph t;
    vkt_graph_init(&t);
    rlx_node x = vkt_input_f32(&t, &r, vkt_shape(2, 1, 64, 0), 1.0f);
    rlx_graph_mark_output(t.g, rlx_matmul(t.g, x, vkt_graph_weight(&t, &r, RLX_DTYPE_F16, 2, 32, 64, 0)), "y");
    rlx_status st = vkt_compile_status(b, &t);
    vkt_graph_free(&t);
    return st;
}

/* A knob's bad values: refused by the parser and by backend creation; the backend that exists
 * compiles as before. */
static void check_bad(rlx_backend *b, const knob_case *c) {
    for (int k = 0; k < 4; k++) {
        char needle[96];
        snprintf(needle, sizeof needle, "%s='%s'", c->name, c->bad[k]);
        setenv(c->name, c->bad[k], 1);
        rlx_vk_options o;
        T_ERR(rlx_vk_options_from_env(&o), RLX_ERR_INVALID_ARGUMENT, needle);
        rlx_backend *other = NULL;
        T_ERR(rlx_backend_vulkan_create(NULL, &other), RLX_ERR_INVALID_ARGUMENT, needle);
        if (other) rlx_backend_destroy(other);
    }
    T_CHECK(T_OK(compile_matvec(b)), "%s set after the backend was created reached its compile", c->name);
}

/* A value the parser accepts, set on the backend: a compile with it succeeds. */
static void check_good(rlx_backend *b, const knob_case *c, const char *v) {
    setenv(c->name, v, 1);
    rlx_vk_options o;
    if (T_OK(rlx_vk_options_from_env(&o))) {
        vkt_set_options(b, &o);
        T_CHECK(T_OK(compile_matvec(b)), "%s='%s' was refused", c->name, v);
    }
}

/* Fields set in code outside their variable's range. */
static void check_fields(rlx_backend *b) {
    rlx_vk_options base = rlx_vk_options_default(), o;
    o = base, o.matvec_r = 3;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_MATVEC_R");
    o = base, o.coopmat_tm = 256;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_COOPMAT_TM");
    o = base, o.warm = 2;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_WARM");
    o = base, o.moe_grouped = 2;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_MOE_GROUPED");
    o = base, o.matmul_batch = 2;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_MATMUL_BATCH");
    o = base, o.moe_tm = 32 + 16;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_MOE_TM");
    o = base, o.warm_next_kib = 1048577;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_WARM_NEXT");
    o = base, o.coopmat = (rlx_vk_coopmat)99;
    T_ERR(rlx_vk_backend_set_options(b, &o), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_COOPMAT");
    o = base, o.max_binding_bytes = 4095;
    rlx_backend *other = NULL;
    T_ERR(rlx_backend_vulkan_create_with(&o, &other), RLX_ERR_INVALID_ARGUMENT, "RLX_VK_MAX_BINDING_BYTES");
    if (other) rlx_backend_destroy(other);
    printf("options set in code: 8 out-of-range fields refused\n");
}

int main(void) {
    for (size_t i = 0; i < N_CASES; i++) unsetenv(cases[i].name);
    rlx_vk_options env = vkt_options();
    rlx_backend *b = vkt_backend_with(&env);
    T_OK(compile_matvec(b));
    for (size_t i = 0; i < N_CASES; i++) {
        const knob_case *c = &cases[i];
        check_bad(b, c);
        for (int k = 0; k < 2; k++) check_good(b, c, c->good[k]);
        check_good(b, c, "");
        unsetenv(c->name);
        vkt_set_options(b, &env);
        printf("%s: checked 4 bad values at parsing and creation, %s, %s and empty at compile\n", c->name,
               c->good[0], c->good[1]);
    }
    check_fields(b);
    rlx_backend_destroy(b);
    vkt_check_validation();
    return t_summary("test_vk_knobs");
}
