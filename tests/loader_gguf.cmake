# GGUF reader and dequantization (loader/gguf.c, loader/dequant.c, loader/mapped_file.c).
rlx_add_test(NAME test_gguf_bad_input SOURCES test_gguf_bad_input.c gguf_builder.c LABELS unit)
rlx_add_test(NAME test_gguf_fixtures SOURCES test_gguf_fixtures.c LABELS unit parity)
rlx_add_test(NAME test_dequant SOURCES test_dequant.c LABELS unit parity)
