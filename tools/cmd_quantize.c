/* rlx quantize IN.gguf OUT.gguf TYPE [--threads N]: F32/F16/BF16 models to llama.cpp's quantized
 * file types, with llama.cpp's per-tensor choices (loader/quant/quant_mix.c). */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "cli_util.h"
#include "commands.h"
#include "loader/format/gguf.h"
#include "loader/quant/quantize.h"
#include "quant_progress.h"

static void usage(FILE *f) {
    fprintf(f, "usage: rlx quantize IN.gguf OUT.gguf TYPE [--threads N]\n"
               "\n"
               "Quantizes a GGUF model whose tensors are F32, F16 or BF16. Metadata is copied, with\n"
               "general.file_type set to llama.cpp's number for TYPE; 1-D tensors and norms stay as\n"
               "they are; each tensor gets the type llama-quantize would give it (e.g. Q4_K_M puts\n"
               "output.weight and half of attn_v / ffn_down in Q6_K); rows that do not split into\n"
               "256-element blocks fall back as in llama.cpp (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0).\n"
               "OUT is written as OUT.tmp and renamed when complete.\n"
               "\n"
               "TYPE:\n");
    size_t n;
    const rlx_quant_recipe *r = rlx_quant_recipes(&n);
    for (size_t i = 0; i < n; i++) fprintf(f, "  %-8s %s\n", r[i].name, r[i].summary);
    fprintf(f, "\n"
               "options:\n"
               "  -t, --threads N   worker threads (default 0: every online core)\n"
               "  -h, --help        this text\n"
               "\n"
               "exit status: 0 on success, 1 when reading or writing fails, 2 on bad arguments.\n");
}

static rlx_status unknown_type(const char *name) {
    char list[512];
    size_t n, len = 0;
    const rlx_quant_recipe *r = rlx_quant_recipes(&n);
    list[0] = '\0';
    for (size_t i = 0; i < n && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", r[i].name);
    return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unknown TYPE '%s' (valid: %s)", name, list);
}

typedef struct quantize_args {
    const char *in, *out, *type; /* borrowed from argv */
    size_t n_pos; /* of in, out, type given */
    int threads;
    bool help;
} quantize_args;

static const struct option options[] = {
    {"threads", required_argument, NULL, 't'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static rlx_status apply(const rlx_cli_parser *p, int opt, void *args) {
    quantize_args *a = args;
    const char **pos[] = {&a->in, &a->out, &a->type};
    switch (opt) {
    case 't':
        return rlx_cli_parse_threads(p->name, p->value, &a->threads);
    case 'h':
        a->help = true;
        return NULL;
    }
    if (a->n_pos == 3)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "unexpected argument '%s' (expected IN.gguf OUT.gguf TYPE)",
                          p->value);
    *pos[a->n_pos++] = p->value;
    return NULL;
}

static rlx_status parse(int argc, char **argv, quantize_args *a) {
    rlx_cli_parser p = {.argc = argc, .argv = argv, .shorts = "t:h", .longs = options, .long_names = "t"};
    RLX_TRY(rlx_cli_parse(&p, apply, a));
    if (a->help) return NULL;
    if (a->n_pos < 3)
        return rlx_errorf(RLX_ERR_INVALID_ARGUMENT, "missing %s (expected IN.gguf OUT.gguf TYPE)",
                          a->n_pos == 0 ? "IN.gguf" : a->n_pos == 1 ? "OUT.gguf" : "TYPE");
    if (!rlx_quant_recipe_find(a->type)) return unknown_type(a->type);
    return NULL;
}

int rlx_cmd_quantize(int argc, char **argv) {
    quantize_args a = {0};
    rlx_status s = parse(argc, argv, &a);
    if (s) return rlx_cli_fail("quantize", s, true);
    if (a.help) {
        usage(stdout);
        return RLX_EXIT_OK;
    }
    rlx_quant_progress p;
    rlx_quant_progress_start(&p, "quantize");
    s = rlx_quantize_file(a.in, a.out, rlx_quant_recipe_find(a.type), a.threads, rlx_quant_progress_update, &p);
    rlx_quant_progress_end(&p);
    if (s) return rlx_cli_fail("quantize", s, false);
    rlx_quant_print_summary("quantize", a.out, rlx_cli_now() - p.t0);
    return RLX_EXIT_OK;
}

/* ---- progress and summary, shared with rlx synth ---- */

void rlx_quant_progress_start(rlx_quant_progress *p, const char *label) {
    *p = (rlx_quant_progress){.label = label, .t0 = rlx_cli_now(), .tty = isatty(STDERR_FILENO) != 0};
    p->last = p->t0;
}

/* A terminal gets one line redrawn; a log (stderr not a terminal) gets a line every 30 s once the
 * work has run 10 s, so a 20-minute model write shows it is alive and when it will end. */
void rlx_quant_progress_update(void *user, uint64_t done, uint64_t total, const char *tensor) {
    rlx_quant_progress *p = user;
    double now = rlx_cli_now(), ran = now - p->t0;
    if (p->tty ? ran < 1.0 || (now - p->last < 0.1 && done < total)
               : ran < 10.0 || now - p->last < 30.0 || done >= total)
        return;
    p->last = now;
    double frac = total ? (double)done / (double)total : 1.0;
    double left = frac > 0 ? ran * (1.0 - frac) / frac : 0;
    fprintf(stderr, "%s%s: %5.1f%%  %8.1f / %.1f MiB  %4.0f s left  %-40.40s%s", p->tty ? "\r" : "", p->label,
            100.0 * frac, (double)done / 1048576.0, (double)total / 1048576.0, left, tensor ? tensor : "",
            p->tty ? "" : "\n");
    p->shown = p->tty;
    fflush(stderr);
}

void rlx_quant_progress_end(rlx_quant_progress *p) {
    if (p->shown) fputc('\n', stderr);
}

void rlx_quant_print_summary(const char *cmd, const char *path, double seconds) {
    rlx_gguf *g = NULL;
    rlx_status s = rlx_gguf_open(path, &g);
    if (s) { /* written but unreadable: say so, the write itself succeeded */
        fprintf(stderr, "rlx %s: reading back '%s': %s\n", cmd, path, rlx_status_message(s));
        rlx_status_free(s);
        return;
    }
    uint64_t count[RLX_DTYPE_COUNT] = {0};
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].type < RLX_DTYPE_COUNT) count[g->tensors[i].type]++;
    printf("%s: %" PRIu64 " tensors (", path, g->n_tensors);
    const char *sep = "";
    for (uint32_t t = 0; t < RLX_DTYPE_COUNT; t++) {
        if (!count[t]) continue;
        printf("%s%" PRIu64 " %s", sep, count[t], rlx_dtype_name(t));
        sep = ", ";
    }
    printf("), %.1f MiB, %.1f s\n", (double)g->size / 1048576.0, seconds);
    rlx_gguf_close(g);
}
