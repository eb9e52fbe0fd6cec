/* The default model (models/stories260K.gguf), linked into the rlx binary. */
#ifndef RLX_TOOLS_DEFAULT_MODEL_H
#define RLX_TOOLS_DEFAULT_MODEL_H

#include <stddef.h>

#include "rlx/status.h"

/* Bytes of the embedded GGUF. */
size_t rlx_default_model_size(void);
/* *path: a path the loader can open that holds the embedded model (an in-memory file, made on the
 * first call and kept open for the life of the process; the string is static). */
rlx_status rlx_default_model_path(const char **path);

#endif
