/* How much host memory a new allocation can have: what the CPU backend checks a KV cache against
 * before allocating it, so that a context too large for the machine is refused up front with
 * needed vs available bytes instead of failing (or being OOM-killed) half-way. */
#ifndef RLX_CPU_HOST_MEMORY_H
#define RLX_CPU_HOST_MEMORY_H

#include <stdint.h>

/* Bytes available for new allocations: /proc/meminfo's MemAvailable (the kernel's estimate of
 * what can be allocated without swapping), lowered to the cgroup v2 limit's headroom
 * (memory.max - memory.current) when the process runs in a limited cgroup. Where neither can be
 * read, the free physical pages (sysconf). 0 when nothing is known. */
uint64_t rlx_host_memory_available(void);

#endif
