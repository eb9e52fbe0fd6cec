/* See cpu_options.h. */
#include "cpu_fallback/cpu_options.h"

#include <stdlib.h>

rlx_cpu_options rlx_cpu_options_from_env(void) {
    const char *simd = getenv("RLX_CPU_SIMD");
    return (rlx_cpu_options){.simd = simd && *simd ? simd : NULL};
}
