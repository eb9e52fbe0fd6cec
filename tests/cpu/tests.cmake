# The CPU backend's SIMD kernels and thread pool (cpu_fallback/cpu_simd*.c, thread_pool.c).
rlx_add_test(NAME test_cpu_simd SOURCES test_cpu_simd.c LABELS unit)
rlx_add_test(NAME test_cpu_ops SOURCES test_cpu_ops.c test_cpu_recurrent.c LABELS unit)
rlx_add_test(NAME test_cpu_rows SOURCES test_cpu_rows.c LABELS unit)
