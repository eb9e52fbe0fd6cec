# The IR (ir/) and the CPU reference backend (cpu_fallback/).
rlx_add_test(NAME test_cpu_ops SOURCES test_cpu_ops.c LABELS unit)
