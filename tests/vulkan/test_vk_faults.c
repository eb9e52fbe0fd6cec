/* Injected Vulkan faults (runtime/vk_fault.h) over a whole runner: stories260K opened on the Vulkan
 * backend, a short greedy generation, one more decode step. The fault-free run counts its
 * device-memory allocations (vkCreateBuffer + vkAllocateMemory) and its submits; then, for EVERY
 * allocation N, the Nth fails with VK_ERROR_OUT_OF_DEVICE_MEMORY, and for EVERY submit N, the Nth
 * reports VK_ERROR_DEVICE_LOST (at the submit, and after the wait): during open (weight upload),
 * the first prefill, and each decode step.
 *
 * Each faulted run must fail with a status (RLX_ERR_OUT_OF_MEMORY / RLX_ERR_DEVICE) naming the
 * VkResult, never abort. After an allocation failure the same runner, asked again, must work;
 * after a loss it must keep failing (the device stays lost). Then it is closed, and a runner opened
 * afterwards in the same process must give the fault-free run's ids and logits bit for bit. Where the truth comes from:
 *   - the fault-free run's greedy ids equal the first ids of the float64 reference in
 *     tests/data/stories260K-ref-hf.json (Hugging Face transformers; margins >= 2.9 logits);
 *   - "everything freed" on the device: the validation layer's object tracker reports a buffer or
 *     memory object still alive at vkDestroyDevice, and any message fails the test; on the host:
 *     LeakSanitizer in the sanitized build;
 *   - `rlx generate` under RLX_VK_FAULT exits 1 with one line naming the fault (argv[1]: rlx).
 *
 * The registry (the instance) is held for the whole test so that its hundred-odd opens do not each
 * pay for instance creation; every open still creates and destroys its own VkDevice. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlx/runner.h"
#include "runtime/vk_backend.h"
#include "runtime/vk_fault.h"
#include "test_util.h"
#include "test_vk_util.h"

#define N_NEW 4
#define N_CTX 64

/* "Once upon a time" and the first greedy ids, from tests/data/stories260K-ref-hf.json */
static const int32_t prompt[] = {1, 403, 407, 261, 378};
static const int32_t hf_greedy[N_NEW] = {432, 383, 286, 261};

static const char *model;
static char device[16]; /* the index vkt_backend chose */
static int32_t n_vocab;

typedef struct run_result {
    int32_t ids[N_NEW];
    int32_t n_ids;
    float *logits; /* owned, n_vocab: the decode step after the generation */
} run_result;

/* Counts of the fault-free run at its phase boundaries. */
typedef struct phase_counts {
    uint64_t mem_open, mem_total;
    uint64_t sub_open, sub_generate, sub_total;
} phase_counts;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static rlx_status run_open(rlx_runner **r) {
    rlx_runner_opts o = rlx_runner_opts_default();
    o.backend = "vulkan";
    o.device = device;
    o.n_ctx = N_CTX;
    return rlx_runner_open(model, &o, r);
}

static rlx_status run_use(rlx_runner *r, run_result *out, phase_counts *pc) {
    rlx_sample_opts greedy = rlx_sample_opts_greedy();
    greedy.ignore_eos = true;
    out->n_ids = 0;
    RLX_TRY(rlx_runner_generate(r, prompt, (int32_t)(sizeof prompt / sizeof *prompt), N_NEW, &greedy, NULL, NULL,
                                out->ids, &out->n_ids));
    if (pc) pc->sub_generate = rlx_vk_fault_submit_events();
    if (out->n_ids != N_NEW)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "generated %d ids, expected %d", (int)out->n_ids, N_NEW);
    return rlx_runner_decode_get_logits(r, out->ids[N_NEW - 1], out->logits);
}

/* One open + generate + decode; *r stays open (NULL when open failed) for the caller to probe. */
static rlx_status run_all(rlx_runner **r, run_result *out, phase_counts *pc) {
    *r = NULL;
    RLX_TRY(run_open(r));
    if (pc) {
        pc->mem_open = rlx_vk_fault_memory_events();
        pc->sub_open = rlx_vk_fault_submit_events();
    }
    return run_use(*r, out, pc);
}

static bool same_run(const run_result *a, const run_result *b) {
    return a->n_ids == b->n_ids && memcmp(a->ids, b->ids, sizeof a->ids) == 0 &&
           memcmp(a->logits, b->logits, (size_t)n_vocab * sizeof *a->logits) == 0;
}

/* A runner opened without faults after a failure: works, and matches the reference exactly. */
static void check_reopen(const run_result *ref, const char *what, uint64_t n) {
    rlx_vk_fault_arm(RLX_VK_FAULT_NONE, 0);
    run_result got = {.logits = calloc((size_t)n_vocab, sizeof(float))};
    rlx_runner *r = NULL;
    rlx_status s = run_all(&r, &got, NULL);
    T_CHECK(!s, "%s at %" PRIu64 ": the reopened runner failed: %s", what, n, rlx_status_message(s));
    T_CHECK(s || same_run(ref, &got), "%s at %" PRIu64 ": the reopened runner's ids/logits differ from the "
            "fault-free run", what, n);
    rlx_status_free(s);
    rlx_runner_close(r);
    free(got.logits);
}

static void check_validation_clean(const char *what, uint64_t n) {
    uint64_t m = rlx_vk_validation_message_count();
    T_CHECK(m == 0, "%s at %" PRIu64 ": %" PRIu64 " validation message(s) (printed above)", what, n, m);
    rlx_vk_validation_message_reset();
}

/* The Nth allocation fails: the run must fail with RLX_ERR_OUT_OF_MEMORY naming the VkResult. */
static void oom_at(uint64_t n, const run_result *ref) {
    rlx_vk_fault_arm(RLX_VK_FAULT_OOM, n);
    run_result got = {.logits = calloc((size_t)n_vocab, sizeof(float))};
    rlx_runner *r = NULL;
    rlx_status s = run_all(&r, &got, NULL);
    bool fired = rlx_vk_fault_fired();
    if (fired) {
        T_CHECK(s && rlx_status_code(s) == RLX_ERR_OUT_OF_MEMORY &&
                    strstr(rlx_status_message(s), "VK_ERROR_OUT_OF_DEVICE_MEMORY"),
                "oom at %" PRIu64 ": expected RLX_ERR_OUT_OF_MEMORY naming VK_ERROR_OUT_OF_DEVICE_MEMORY, got %s: %s",
                n, rlx_code_name(rlx_status_code(s)), rlx_status_message(s));
    } else {
        T_CHECK(!s && same_run(ref, &got), "oom at %" PRIu64 " (never reached): the run failed or differs: %s", n,
                rlx_status_message(s));
    }
    printf("  oom at %" PRIu64 ": %s\n", n, s ? rlx_status_message(s) : "ok (never reached)");
    rlx_status_free(s);
    if (r && fired) {
        /* an allocation failure is not fatal: the same runner, asked again, works */
        s = run_use(r, &got, NULL);
        T_CHECK(!s && same_run(ref, &got), "oom at %" PRIu64 ": the runner failed or differs when asked again: %s", n,
                rlx_status_message(s));
        rlx_status_free(s);
    }
    rlx_runner_close(r);
    free(got.logits);
    check_validation_clean("oom", n);
    check_reopen(ref, "oom", n);
}

static const char *submit_phase(const phase_counts *pc, uint64_t n) {
    if (n <= pc->sub_open) return "open: the weights' upload";
    if (n <= pc->sub_generate) return "generate: the prefill's or a decode step's compile or run";
    return "decode_get_logits";
}

/* The Nth submit reports device loss: the run fails with RLX_ERR_DEVICE, and so does any later use. */
static void lost_at(rlx_vk_fault_kind kind, uint64_t n, const phase_counts *pc, const run_result *ref) {
    const char *name = kind == RLX_VK_FAULT_LOST ? "lost" : "lost-wait";
    rlx_vk_fault_arm(kind, n);
    run_result got = {.logits = calloc((size_t)n_vocab, sizeof(float))};
    rlx_runner *r = NULL;
    rlx_status s = run_all(&r, &got, NULL);
    T_CHECK(rlx_vk_fault_fired(), "%s at %" PRIu64 ": the fault never fired", name, n);
    T_CHECK(s && rlx_status_code(s) == RLX_ERR_DEVICE && strstr(rlx_status_message(s), "VK_ERROR_DEVICE_LOST"),
            "%s at %" PRIu64 ": expected RLX_ERR_DEVICE naming VK_ERROR_DEVICE_LOST, got %s: %s", name, n,
            rlx_code_name(rlx_status_code(s)), rlx_status_message(s));
    printf("  %s at %" PRIu64 " (%s): %s\n", name, n, submit_phase(pc, n), rlx_status_message(s));
    rlx_status_free(s);
    if (r) {
        /* the device stays lost: the next call fails the same way instead of running on it */
        s = run_use(r, &got, NULL);
        T_CHECK(s && rlx_status_code(s) == RLX_ERR_DEVICE, "%s at %" PRIu64 ": a call after the loss gave %s", name,
                n, s ? rlx_status_message(s) : "success");
        rlx_status_free(s);
    }
    rlx_runner_close(r);
    free(got.logits);
    check_validation_clean(name, n);
    check_reopen(ref, name, n);
}

/* `rlx generate` under RLX_VK_FAULT=<fault>: exit 1 and one line on stderr containing `needle`. */
static void cli_fault(const char *rlx, const char *fault, const char *needle) {
    const char *argv[] = {rlx, "generate", "-m", model, "--tokens", "1,403,407", "-n", "3", "--backend", "vulkan",
                          "--device", device, "--ctx", "64", NULL};
    /* in a sanitized build: no "Suppressions used" table on stderr (the line count is checked) */
    const char *lsan = getenv("LSAN_OPTIONS");
    char fault_env[128], lsan_env[1024];
    snprintf(fault_env, sizeof fault_env, "RLX_VK_FAULT=%s", fault);
    snprintf(lsan_env, sizeof lsan_env, "LSAN_OPTIONS=%s%sprint_suppressions=0", lsan ? lsan : "",
             lsan && *lsan ? ":" : "");
    const char *env[] = {fault_env, lsan_env, NULL};
    t_cli_result res;
    if (!t_run_cli(argv, env, 60, &res)) return;
    printf("RLX_VK_FAULT=%s rlx generate: exit %d, stderr: %s", fault, res.status, res.err);
    T_CHECK(res.status == 1, "RLX_VK_FAULT=%s: expected exit status 1, got %d", fault, res.status);
    T_CHECK(res.lines == 1 && strstr(res.err, needle), "RLX_VK_FAULT=%s: expected one line containing '%s'", fault,
            needle);
}

int main(int argc, char **argv) {
    model = t_source_path("models/stories260K.gguf");
    rlx_backend *probe = vkt_backend(); /* the skip rule, and the device to use */
    snprintf(device, sizeof device, "%u", rlx_vk_backend_caps(probe)->index);
    T_OK(rlx_vk_registry_acquire());
    rlx_backend_destroy(probe);
    double t0 = now_s();

    rlx_vk_fault_arm(RLX_VK_FAULT_NONE, 0);
    rlx_runner *r = NULL;
    phase_counts pc = {0};
    if (!T_OK(run_open(&r))) return t_summary("test_vk_faults");
    n_vocab = rlx_runner_vocab_size(r);
    rlx_runner_close(r);
    run_result ref = {.logits = calloc((size_t)n_vocab, sizeof(float))};
    rlx_vk_fault_arm(RLX_VK_FAULT_NONE, 0);
    if (!T_OK(run_all(&r, &ref, &pc))) return t_summary("test_vk_faults");
    rlx_runner_close(r);
    pc.mem_total = rlx_vk_fault_memory_events();
    pc.sub_total = rlx_vk_fault_submit_events();
    printf("fault-free run: ids %d %d %d %d (HF greedy %d %d %d %d); %" PRIu64 " memory events (%" PRIu64
           " in open), %" PRIu64 " submits (%" PRIu64 " in open)\n",
           ref.ids[0], ref.ids[1], ref.ids[2], ref.ids[3], hf_greedy[0], hf_greedy[1], hf_greedy[2], hf_greedy[3],
           pc.mem_total, pc.mem_open, pc.sub_total, pc.sub_open);
    T_CHECK(memcmp(ref.ids, hf_greedy, sizeof hf_greedy) == 0, "the fault-free greedy ids differ from HF's");
    T_CHECK(pc.mem_total > 0 && pc.sub_total > pc.sub_open, "the run counted no allocations or no submits after open");
    check_validation_clean("fault-free run", 0);

    /* every allocation, and one past the last (never reached: the run must succeed) */
    for (uint64_t n = 1; n <= pc.mem_total + 1; n++) oom_at(n, &ref);
    double t_oom = now_s();
    for (uint64_t n = 1; n <= pc.sub_total; n++) lost_at(RLX_VK_FAULT_LOST, n, &pc, &ref);
    for (uint64_t n = 1; n <= pc.sub_total; n++) lost_at(RLX_VK_FAULT_LOST_WAIT, n, &pc, &ref);
    double t_lost = now_s();
    rlx_vk_fault_arm(RLX_VK_FAULT_NONE, 0);
    printf("exercised: oom at %" PRIu64 " allocation points (+1 past the end) in %.1f s, device loss at %" PRIu64
           " submits x 2 kinds in %.1f s; every failure followed by a fault-free reopen compared bit for bit\n",
           pc.mem_total, t_oom - t0, pc.sub_total, t_lost - t_oom);
    free(ref.logits);
    rlx_vk_registry_release();
    vkt_check_validation();

    if (argc > 1) {
        cli_fault(argv[1], "oom:1", "VK_ERROR_OUT_OF_DEVICE_MEMORY");
        cli_fault(argv[1], "lost:2", "VK_ERROR_DEVICE_LOST");
        cli_fault(argv[1], "lost-wait:1", "VK_ERROR_DEVICE_LOST");
        cli_fault(argv[1], "oom:x", "RLX_VK_FAULT='oom:x'");
    }
    return t_summary("test_vk_faults");
}
