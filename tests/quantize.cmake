# GGUF writing, quantization, llama.cpp's type mixes and rlx synth (loader/gguf_writer.c,
# loader/quantize*.c, loader/quant_mix.c, tools/cmd_quantize.c, tools/cmd_synth.c).
rlx_add_test(NAME test_quantize SOURCES test_quantize.c LABELS unit)
rlx_add_test(NAME test_quantize_fixtures SOURCES test_quantize_fixtures.c LABELS unit parity)
rlx_add_test(NAME test_gguf_writer SOURCES test_gguf_writer.c LABELS unit)
rlx_add_test(NAME test_quantize_mix SOURCES test_quantize_mix.c ${CMAKE_SOURCE_DIR}/tools/synth_shapes.c LABELS unit parity)
rlx_add_test(NAME test_quantize_logits SOURCES test_quantize_logits.c LABELS parity)
rlx_add_script_test(NAME cli_synth SCRIPT cli_synth.sh LABELS e2e)
rlx_add_script_test(NAME cli_quantize SCRIPT cli_quantize.sh LABELS e2e)
