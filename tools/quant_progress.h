/* Progress of `rlx quantize` and `rlx synth` on stderr, with the time left: on a terminal once the
 * work has run for more than a second, redrawn at most ten times a second; otherwise (a log) a
 * line every 30 s once it has run 10 s. */
#ifndef RLX_TOOLS_QUANT_PROGRESS_H
#define RLX_TOOLS_QUANT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rlx_quant_progress {
    const char *label; /* borrowed: "quantize", "synth" */
    double t0, last;   /* rlx_cli_now() at start and at the last redraw */
    bool tty;
    bool shown;        /* a line was drawn: end() finishes it */
} rlx_quant_progress;

void rlx_quant_progress_start(rlx_quant_progress *p, const char *label);
/* An rlx_quant_progress_fn; user is the rlx_quant_progress. */
void rlx_quant_progress_update(void *user, uint64_t done, uint64_t total, const char *tensor);
void rlx_quant_progress_end(rlx_quant_progress *p);

/* Prints "N tensors: a Q4_K, b Q6_K, ... ; X MiB" for a written GGUF to stdout. */
void rlx_quant_print_summary(const char *cmd, const char *path, double seconds);

#endif
