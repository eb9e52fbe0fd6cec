/* One named weight tensor as stored (any rlx_dtype), shared by the loaders and the backends. */
#ifndef RLX_LOADER_WEIGHT_H
#define RLX_LOADER_WEIGHT_H

#include <stdint.h>

#define RLX_WEIGHT_MAX_DIMS 4

typedef struct rlx_weight {
    const char *name;  /* rlx convention (GGUF names); owned by whoever owns the weight table */
    uint32_t type;     /* rlx_dtype */
    uint32_t n_dims;
    uint64_t ne[RLX_WEIGHT_MAX_DIMS]; /* ne[0] contiguous (GGUF order); unused dims are 1 */
    uint64_t nbytes;
    const void *data;  /* borrowed from a mapping, or owned by the weight table's owner */
} rlx_weight;

#endif
