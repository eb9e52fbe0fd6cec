/* The report behind `rlx inspect`: built as one JSON object, printed as JSON or as text, so the
 * two forms can never disagree. */
#ifndef RLX_TOOLS_INSPECT_REPORT_H
#define RLX_TOOLS_INSPECT_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "loader/format/model.h"
#include "rlx/status.h"

rlx_status rlx_inspect_gguf(const char *path, json_t **out);
rlx_status rlx_inspect_hf_dir(const char *dir, json_t **out);
json_t *rlx_inspect_config_json(const rlx_model_config *c);
json_t *rlx_inspect_weights_json(const rlx_model *m);
void rlx_inspect_print_text(const json_t *report, FILE *f);
/* A JSON string of s[0, n); bytes that are not UTF-8 (a file's names, or a message quoting them)
 * become U+FFFD, since JSON strings must be UTF-8. NULL only when out of memory. */
json_t *rlx_inspect_text_json(const char *s, size_t n);

#endif
