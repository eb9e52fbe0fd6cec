# safetensors, config.json / GGUF config, the HF -> GGUF mapping and rlx_model
# (loader/safetensors.c, loader/model_config.c, loader/hf_convert.c, loader/model.c).
rlx_add_test(NAME test_model_parity SOURCES test_model_parity.c LABELS parity)
