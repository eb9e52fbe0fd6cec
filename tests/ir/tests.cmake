# The IR (ir/) and the CPU reference backend (cpu_fallback/).
rlx_add_test(NAME test_ir_shapes SOURCES test_ir_shapes.c LABELS unit)
rlx_add_test(NAME test_ir_verify SOURCES test_ir_verify.c LABELS unit)
rlx_add_test(NAME test_ir_dump SOURCES test_ir_dump.c LABELS unit)
rlx_add_test(NAME test_ir_op_table SOURCES test_ir_op_table.c LABELS unit)
