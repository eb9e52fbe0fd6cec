# safetensors, config.json / GGUF config, the HF -> GGUF mapping and rlx_model
# (loader/safetensors.c, loader/model_config.c, loader/hf_convert.c, loader/model.c).
# Fuzz targets tests/fuzz/fuzz_safetensors.c and fuzz_config_json.c are picked up by fuzz.cmake.
rlx_add_test(NAME test_safetensors_read SOURCES test_safetensors_read.c LABELS unit)
rlx_add_test(NAME test_safetensors_bad_input SOURCES test_safetensors_bad_input.c LABELS unit)
rlx_add_test(NAME test_safetensors_fixtures SOURCES test_safetensors_fixtures.c LABELS unit parity)
rlx_add_test(NAME test_model_config SOURCES test_model_config.c gguf_builder.c LABELS unit)
rlx_add_test(NAME test_model_open SOURCES test_model_open.c gguf_builder.c LABELS unit)
rlx_add_test(NAME test_model_parity SOURCES test_model_parity.c LABELS parity)
