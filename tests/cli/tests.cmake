rlx_add_script_test(NAME cli_inspect SCRIPT cli_inspect.sh LABELS e2e)
rlx_add_script_test(NAME cli_text SCRIPT cli_text.sh LABELS e2e)
if(RLX_VULKAN)
  rlx_add_script_test(NAME cli_text_vulkan SCRIPT cli_text_vulkan.sh LABELS "e2e;vulkan")
  set_property(TEST cli_text_vulkan APPEND PROPERTY ENVIRONMENT
    "RLX_VK_VALIDATION=1" "XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/vk-cache")
  # the device choice of tests/vulkan/tests.cmake: the first GPU, else lavapipe
  if(NOT DEFINED ENV{RLX_VK_DEVICE})
    set_property(TEST cli_text_vulkan APPEND PROPERTY ENVIRONMENT "RLX_VK_DEVICE=gpu,llvmpipe")
  endif()
endif()

# The library reads the environment only in its options files and the cache-directory helper
rlx_add_script_test(NAME getenv_rule SCRIPT getenv_rule.sh LABELS unit)
# ... and no include climbs past the layer rule's include roots
rlx_add_script_test(NAME include_rule SCRIPT include_rule.sh LABELS unit)

# cmake --install: the installed rlx runs its linked-in default model from another directory, and
# programs build against the installed librlx (pkg-config, find_package)
# model, tokenizer, config and template paths that are FIFOs end at once with an error
rlx_add_script_test(NAME cli_fifo SCRIPT cli_fifo.sh LABELS e2e)
rlx_add_script_test(NAME cli_install SCRIPT install.sh LABELS e2e)
if(RLX_FUZZ OR RLX_SANITIZE)
  # a sanitized librlx needs the sanitizer's runtime in whatever links it: the probes are skipped
  set_property(TEST cli_install APPEND PROPERTY ENVIRONMENT RLX_BUILD_SANITIZED=1)
endif()

# rlx bench (tools/cmd_bench.c): the CLI on the embedded stories260K, on the CPU backend and on
# Vulkan (lavapipe in CI, validation layer on). Each run keeps its bandwidth cache in a temporary
# XDG_CACHE_HOME (the script sets it), so the measure-then-reuse path is exercised every time.
rlx_add_script_test(NAME cli_bench SCRIPT cli_bench.sh LABELS e2e)
# tools/bench_ab.py, the A/B harness of the GPU benchmarks, on the story model (CPU backend)
rlx_add_script_test(NAME cli_bench_ab SCRIPT cli_bench_ab.sh LABELS e2e)
# tools/batched_compare.py, rlx against llama-batched-bench, with a stand-in for the latter
rlx_add_script_test(NAME cli_batched_compare SCRIPT cli_batched_compare.sh LABELS e2e)
set_property(TEST cli_bench APPEND PROPERTY ENVIRONMENT "RLX_BENCH_TEST_BACKEND=cpu")
if(RLX_VULKAN)
  rlx_add_script_test(NAME cli_bench_vulkan SCRIPT cli_bench.sh LABELS "e2e;vulkan")
  set_property(TEST cli_bench_vulkan APPEND PROPERTY ENVIRONMENT "RLX_BENCH_TEST_BACKEND=vulkan" "RLX_VK_VALIDATION=1")
  # the device choice of tests/vulkan/tests.cmake: the first GPU, else lavapipe
  if(NOT DEFINED ENV{RLX_VK_DEVICE})
    set_property(TEST cli_bench_vulkan APPEND PROPERTY ENVIRONMENT "RLX_VK_DEVICE=gpu,llvmpipe")
  endif()
endif()

# The corrupt-file corpus (tests/cli/test_corrupt_corpus.c): hundreds of broken models derived from the
# fixtures with a fixed seed, each run through `rlx inspect`, `rlx run` and `rlx generate` (the CLI's
# command functions, linked in, run in forked children).
rlx_add_test(NAME test_corrupt_corpus
  SOURCES test_corrupt_corpus.c corrupt_gguf.c corrupt_hf.c
  LABELS fuzz e2e)
target_link_libraries(test_corrupt_corpus PRIVATE rlx_cli_obj)

# Resource limits: a context too large for host memory is refused up front (CPU backend).
rlx_add_test(NAME test_resource_limits SOURCES test_resource_limits.c LABELS unit e2e ARGS ${RLX_CLI})

# Scripts of other areas' commands, end to end through the CLI
rlx_add_script_test(NAME cli_synth SCRIPT cli_synth.sh LABELS e2e)
rlx_add_script_test(NAME cli_quantize SCRIPT cli_quantize.sh LABELS e2e)
rlx_add_script_test(NAME cli_tokenize SCRIPT cli_tokenize.sh LABELS e2e)
rlx_add_script_test(NAME cli_stories SCRIPT cli_stories.sh LABELS e2e)
rlx_add_script_test(NAME cli_errors SCRIPT cli_errors.sh LABELS e2e)
# Prompt files, standard input and chat lines are read with a size limit (tools/cli_input.c)
rlx_add_script_test(NAME cli_input SCRIPT cli_input.sh LABELS e2e)
# rlx run, generate and chat as a user meets them: sampling options with llama.cpp's meaning, the
# seed line, Ctrl-C, a chat longer than its context
rlx_add_script_test(NAME cli_run SCRIPT cli_run.sh LABELS e2e)

# Option parsing (tools/cli_util.c: getopt_long, one table per command): every command's unknown
# options, missing and bad values, --opt=value, refused abbreviations, against the messages and exit
# codes of the parser before it; and commands called twice in one process (getopt's global state).
rlx_add_script_test(NAME cli_options SCRIPT cli_options.sh LABELS e2e)
rlx_add_test(NAME test_cli_reparse SOURCES test_cli_reparse.c LABELS unit e2e)
target_link_libraries(test_cli_reparse PRIVATE rlx_cli_obj)

# rlx generate with several prompts (tools/generate_batch.c): batched == alone through the engine,
# --tokens-file, per-prompt failures and bad input, on the CPU backend
rlx_add_script_test(NAME cli_generate_batch SCRIPT cli_generate_batch.sh LABELS e2e)
set_property(TEST cli_generate_batch APPEND PROPERTY ENVIRONMENT "RLX_GENERATE_TEST_BACKEND=cpu")
if(RLX_VULKAN)
  rlx_add_script_test(NAME cli_generate_batch_vulkan SCRIPT cli_generate_batch.sh LABELS "e2e;vulkan")
  set_property(TEST cli_generate_batch_vulkan APPEND PROPERTY ENVIRONMENT
    "RLX_GENERATE_TEST_BACKEND=vulkan" "RLX_VK_VALIDATION=1" "XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/vk-cache")
  # the device choice of tests/vulkan/tests.cmake: the first GPU, else lavapipe
  if(NOT DEFINED ENV{RLX_VK_DEVICE})
    set_property(TEST cli_generate_batch_vulkan APPEND PROPERTY ENVIRONMENT "RLX_VK_DEVICE=gpu,llvmpipe")
  endif()
endif()
