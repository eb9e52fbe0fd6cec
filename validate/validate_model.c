#include "validate/validate_internal.h"

#include <stdlib.h>
#include <string.h>

void vl_model_section(rlx_validate_report *r, const rlx_validate_opts *o) {
    snprintf(r->model, sizeof r->model, "%s", o->model);
    r->model_error = strdup("the model section is not built yet");
}
