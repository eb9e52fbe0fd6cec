/* Choosing a backend by name for a runner. */
#ifndef RLX_RUNNERS_BACKEND_SELECT_H
#define RLX_RUNNERS_BACKEND_SELECT_H

#include "ir/backend.h"
#include "rlx/status.h"

/* name: "cpu", "vulkan", or NULL / "" for the best one available (vulkan when a GPU exists, else
 * cpu). device: a backend device index or name substring, NULL for the default. n_threads: CPU
 * threads, 0 = online cores. *out is owned by the caller (rlx_backend_destroy). */
rlx_status rlx_backend_select(const char *name, const char *device, int n_threads, rlx_backend **out);
/* ... asking opts of it (NULL: the defaults; ir/backend.h rlx_backend_opts). */
rlx_status rlx_backend_select_opts(const char *name, const char *device, int n_threads, const rlx_backend_opts *opts,
                                   rlx_backend **out);

#endif
