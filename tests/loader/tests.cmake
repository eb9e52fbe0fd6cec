# GGUF reader and dequantization (loader/format/gguf.c, loader/core/dequant.c, loader/core/mapped_file.c).
rlx_add_test(NAME test_gguf_bad_input SOURCES test_gguf_bad_input.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
rlx_add_test(NAME test_gguf_fixtures SOURCES test_gguf_fixtures.c LABELS unit parity)
rlx_add_test(NAME test_dequant SOURCES test_dequant.c LABELS unit parity)

# safetensors, config.json / GGUF config, the HF -> GGUF mapping and rlx_model
# (loader/format/safetensors.c, loader/format/model_config.c, loader/format/hf_convert.c, loader/format/model.c).
# Fuzz targets tests/fuzz/fuzz_safetensors.c and fuzz_config_json.c are picked up by fuzz.cmake.
rlx_add_test(NAME test_safetensors_read SOURCES test_safetensors_read.c LABELS unit)
rlx_add_test(NAME test_safetensors_bad_input SOURCES test_safetensors_bad_input.c LABELS unit)
rlx_add_test(NAME test_safetensors_fixtures SOURCES test_safetensors_fixtures.c LABELS unit parity)
rlx_add_test(NAME test_model_config SOURCES test_model_config.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
rlx_add_test(NAME test_model_open SOURCES test_model_open.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
rlx_add_test(NAME test_model_parity SOURCES test_model_parity.c LABELS parity)

# GGUF writing, quantization, llama.cpp's type mixes and rlx synth (loader/quant/gguf_writer.c,
# loader/quant/quantize*.c, loader/quant/quant_mix.c, tools/cmd_quantize.c, tools/cmd_synth.c).
rlx_add_test(NAME test_quantize SOURCES test_quantize.c LABELS unit)
rlx_add_test(NAME test_quantize_fixtures SOURCES test_quantize_fixtures.c LABELS unit parity)
rlx_add_test(NAME test_gguf_writer SOURCES test_gguf_writer.c LABELS unit)
rlx_add_test(NAME test_quantize_mix SOURCES test_quantize_mix.c ${CMAKE_SOURCE_DIR}/tools/synth_shapes.c LABELS unit parity)
rlx_add_test(NAME test_quantize_logits SOURCES test_quantize_logits.c LABELS parity)
rlx_add_test(NAME test_model_unused SOURCES test_model_unused.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
rlx_add_test(NAME test_model_floats SOURCES test_model_floats.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
# Non-regular files (FIFOs, devices) where a model, shard, index or config is expected
# (loader/core/regular_file.c, loader/core/mapped_file.c).
rlx_add_test(NAME test_regular_file SOURCES test_regular_file.c LABELS unit)
# Memory in proportion to a GGUF's size, not its entry count (loader/format/gguf.c string arrays).
rlx_add_test(NAME test_gguf_memory SOURCES test_gguf_memory.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
