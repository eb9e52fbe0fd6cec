/* Choosing a backend by name for a runner. */
#ifndef RLX_RUNNERS_BACKEND_SELECT_H
#define RLX_RUNNERS_BACKEND_SELECT_H

#include "ir/backend.h"
#include "rlx/runner.h"
#include "rlx/status.h"

/* name: "cpu", "vulkan", or NULL / "" for the best one available (vulkan when a GPU exists, else
 * cpu). device: a backend device index or name substring, NULL for the default. n_threads: CPU
 * threads, 0 = online cores. *out is owned by the caller (rlx_backend_destroy). */
rlx_status rlx_backend_select(const char *name, const char *device, int n_threads, rlx_backend **out);
/* ... asking opts of it (NULL: the defaults; ir/backend.h rlx_backend_opts). */
rlx_status rlx_backend_select_opts(const char *name, const char *device, int n_threads, const rlx_backend_opts *opts,
                                   rlx_backend **out);

/* The K/V type a session on backend b gets for the caller's choice t (include/rlx/runner.h): t
 * itself, or for RLX_KV_TYPE_DEFAULT F16 on Vulkan (half the bytes per cached token) and F32
 * elsewhere (the CPU reference keeps F32). */
rlx_kv_type rlx_kv_type_resolve(const rlx_backend *b, rlx_kv_type t);
/* The rlx_dtype of a resolved type's elements. */
static inline uint32_t rlx_kv_type_dtype(rlx_kv_type t) { return t == RLX_KV_TYPE_F16 ? RLX_DTYPE_F16 : RLX_DTYPE_F32; }

#endif
