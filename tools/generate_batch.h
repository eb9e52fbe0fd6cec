/* rlx generate with several prompts: the prompt list (--tokens repeated, --tokens-file) and the
 * continuously batched run of all of them through the engine (include/rlx/engine.h). */
#ifndef RLX_TOOLS_GENERATE_BATCH_H
#define RLX_TOOLS_GENERATE_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "rlx/engine.h"
#include "rlx/status.h"

typedef struct rlx_gen_prompt {
    int32_t *ids;     /* owned, n ids */
    int32_t n;
    const char *file; /* borrowed from argv; NULL: from --tokens */
    int32_t line;     /* the file's line, or which --tokens (from 1) */
} rlx_gen_prompt;

typedef struct rlx_gen_prompts {
    rlx_gen_prompt *v; /* owned, n of them (cap allocated) */
    int32_t n, cap;
} rlx_gen_prompts;

/* One prompt from a --tokens value (opt names the option in messages). */
rlx_status rlx_gen_prompts_add_ids(rlx_gen_prompts *p, const char *opt, const char *text);
/* Every line of path ("-": standard input) as a prompt: comma-separated ids, one prompt a line; a
 * blank or bad line is an error naming its line, and so is a file without prompts. The file may
 * hold RLX_CLI_MAX_TEXT_BYTES at most. */
rlx_status rlx_gen_prompts_add_file(rlx_gen_prompts *p, const char *path);
void rlx_gen_prompts_free(rlx_gen_prompts *p);
/* "prompt 3 ('list.txt' line 2)", "prompt 1 (--tokens 1)" */
void rlx_gen_prompt_name(const rlx_gen_prompts *p, int32_t k, char *buf, size_t size);

typedef struct rlx_gen_batch {
    const char *model;       /* borrowed */
    rlx_engine_opts opts;
    rlx_sample_opts sample;  /* every prompt's, seed included: prompt k gives what it gives alone */
    int32_t n_new;
    const rlx_gen_prompts *prompts; /* borrowed */
} rlx_gen_batch;

/* Generates after every prompt together and prints one line of ids per prompt on stdout, in input
 * order, each once its sequence is done (an empty line for a prompt that failed, whose error goes
 * to stderr naming it: *n_failed counts them). Then the speed on stderr. *bad_ids: the error
 * returned is an id outside the vocabulary (a usage error). */
rlx_status rlx_gen_batch_run(const rlx_gen_batch *b, bool *bad_ids, int32_t *n_failed);

#endif
