/* What a caller may set on the CPU backend. rlx_cpu_options_from_env is the one place in
 * cpu_fallback/ that reads the environment (a test in tests/cli/ checks). */
#ifndef RLX_CPU_OPTIONS_H
#define RLX_CPU_OPTIONS_H

#include "ir/backend.h"

typedef struct rlx_cpu_options {
    const char *simd; /* RLX_CPU_SIMD: "base", "avx2" or "avx512"; NULL, or one this CPU does not run:
                         the best it runs (cpu_simd.c) */
} rlx_cpu_options;

/* RLX_CPU_SIMD when set and not empty (the string points into the environment). */
rlx_cpu_options rlx_cpu_options_from_env(void);

/* rlx_backend_cpu_create (ir/backend.h) with options set by the caller instead of the environment,
 * which rlx_backend_cpu_create reads through rlx_cpu_options_from_env. opts is only read here. */
rlx_status rlx_backend_cpu_create_with(int n_threads, const rlx_cpu_options *opts, rlx_backend **out);

#endif
