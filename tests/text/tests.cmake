# Chat templates (include/rlx/chat_template.h, text/template/chat_template.c, text/template/jinja_*.c).
# The fuzz target tests/fuzz/fuzz_chat_template.c is picked up by fuzz.cmake.
rlx_add_test(NAME test_chat_template_render SOURCES test_chat_template_render.c LABELS unit parity)
rlx_add_test(NAME test_chat_template_unit SOURCES test_chat_template_unit.c LABELS unit)
rlx_add_test(NAME test_chat_template_errors SOURCES test_chat_template_errors.c LABELS unit)
# Depth, cycles, runaway source and 64-bit arithmetic edges (the hostile-input bounds).
rlx_add_test(NAME test_chat_template_limits SOURCES test_chat_template_limits.c LABELS unit)

# Tokenizers (text/tokenizer/tokenizer*.c, include/rlx/tokenizer.h) and `rlx tokenize` / `rlx detokenize`.
# The fuzz target tests/fuzz/fuzz_tokenizer.c is picked up by fuzz.cmake.

# One program, one ctest test per argument, so that a failure names the vocabulary or family.
function(rlx_tokenizer_tests exe labels)
  add_executable(${exe} ${CMAKE_CURRENT_LIST_DIR}/${exe}.c ${CMAKE_CURRENT_LIST_DIR}/test_tokenizer_util.c)
  target_link_libraries(${exe} PRIVATE rlx_test_util)
  foreach(arg ${ARGN})
    add_test(NAME ${exe}_${arg} COMMAND ${exe} ${arg})
    set_tests_properties(${exe}_${arg} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 77
      ENVIRONMENT "RLX_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  endforeach()
endfunction()

# llama.cpp's test-tokenizer-0 vectors, for every fixture vocabulary that has .inp/.out.
rlx_tokenizer_tests(test_tokenizer_vectors "unit;parity"
  bert-bge deepseek-coder deepseek-llm falcon gpt-2 llama-bpe llama-spm mpt phi-3 qwen2 refact starcoder)
# HF directories (tokenizer.json, vocab.json + merges.txt, tokenizer.model) vs truth and vs GGUF.
rlx_tokenizer_tests(test_tokenizer_hf "unit;parity" hf-qwen2 qwen3 qwen35 qwen3moe llama32 gemma3)

rlx_add_test(NAME test_tokenizer_stories SOURCES test_tokenizer_stories.c test_tokenizer_util.c LABELS unit parity)
# decode(encode(x)) == x and streaming == whole decode, for every lossless vocabulary (not bert).
rlx_tokenizer_tests(test_tokenizer_roundtrip "unit"
  deepseek-coder deepseek-llm falcon gpt-2 llama-bpe llama-spm mpt phi-3 qwen2 refact starcoder hf-qwen2
  stories260K qwen3-gguf qwen3-hf llama32-gguf llama32-hf gemma3-gguf gemma3-hf)
rlx_add_test(NAME test_tokenizer_unit SOURCES test_tokenizer_unit.c test_tokenizer_util.c ${RLX_TEST_SUPPORT}/gguf_builder.c LABELS unit)
rlx_add_test(NAME test_tokenizer_hfjson SOURCES test_tokenizer_hfjson.c test_tokenizer_util.c LABELS unit)
rlx_add_test(NAME test_text_utf8 SOURCES test_text_utf8.c LABELS unit)
# Hostile tokenizer files: the regex budget of an encode, ids far beyond the entries; and long
# ordinary texts within the budget. TIMEOUT is the hang guard (the crafted inputs fail in well
# under a second).
rlx_tokenizer_tests(test_tokenizer_limits "unit" regex memory long)
set_tests_properties(test_tokenizer_limits_regex test_tokenizer_limits_memory test_tokenizer_limits_long
  PROPERTIES TIMEOUT 20)
