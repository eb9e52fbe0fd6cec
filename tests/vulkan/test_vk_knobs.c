/* The tuning knobs' checks (runtime/vk_knobs.h). Expectations from the ranges docs/ARCHITECTURE.md
 * and runtime/vk_backend.h document for each knob (a power of two in a range; RLX_VK_WARM 0 or 1;
 * RLX_VK_WAIT poll or block; RLX_VK_PLANS device or gpu; RLX_VK_WARM_NEXT a whole number of KiB up
 * to 1048576; RLX_VK_MAX_BINDING_BYTES a whole number from 4096):
 *   - a set value outside them (not a number, junk after the digits, not a power of two, out of
 *     range) makes backend creation fail with RLX_ERR_INVALID_ARGUMENT, naming the knob and value;
 *   - set after the backend exists, it makes the next compile fail the same way;
 *   - the range's ends and an empty value are accepted: a compile with them succeeds (a decode-sized
 *     matmul, which the matvec planner reads the knobs for). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    {"RLX_VK_COOPMAT_TM", {"32", "256", "96", "0"}, {"64", "128"}},
    {"RLX_VK_COOPMAT_DEPTH", {"4", "3", "0", "deep"}, {"1", "2"}},
    {"RLX_VK_WARM", {"2", "yes", "on", "-1"}, {"0", "1"}},
    {"RLX_VK_WARM_NEXT", {"1048577", "-1", "3M", "2.5"}, {"0", "1048576"}},
    {"RLX_VK_WAIT", {"spin", "1", "Poll", "poll "}, {"poll", "block"}},
    {"RLX_VK_PLANS", {"cpu", "GPU", "1", "gpu "}, {"device", "gpu"}},
    {"RLX_VK_MAX_BINDING_BYTES", {"4095", "0", "64k", "1e9"}, {"4096", "18446744073709551615"}},
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

int main(void) {
    for (size_t i = 0; i < N_CASES; i++) unsetenv(cases[i].name);
    rlx_backend *b = vkt_backend();
    T_OK(compile_matvec(b));
    for (size_t i = 0; i < N_CASES; i++) {
        const knob_case *c = &cases[i];
        for (int k = 0; k < 4; k++) {
            char needle[96];
            snprintf(needle, sizeof needle, "%s='%s'", c->name, c->bad[k]);
            setenv(c->name, c->bad[k], 1);
            rlx_backend *other = NULL;
            T_ERR(rlx_backend_vulkan_create(NULL, &other), RLX_ERR_INVALID_ARGUMENT, needle);
            if (other) rlx_backend_destroy(other);
            T_ERR(compile_matvec(b), RLX_ERR_INVALID_ARGUMENT, needle);
        }
        for (int k = 0; k < 2; k++) {
            setenv(c->name, c->good[k], 1);
            T_CHECK(T_OK(compile_matvec(b)), "%s=%s was refused", c->name, c->good[k]);
        }
        setenv(c->name, "", 1);
        T_CHECK(T_OK(compile_matvec(b)), "%s set empty was refused", c->name);
        unsetenv(c->name);
        printf("%s: checked 4 bad values at creation and compile, %s, %s and empty at compile\n", c->name,
               c->good[0], c->good[1]);
    }
    rlx_backend_destroy(b);
    vkt_check_validation();
    return t_summary("test_vk_knobs");
}
