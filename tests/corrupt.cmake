# The corrupt-file corpus (tests/test_corrupt_corpus.c): hundreds of broken models derived from the
# fixtures with a fixed seed, each run through `rlx inspect`, `rlx run` and `rlx generate` (the CLI's
# command functions, linked in, run in forked children).
rlx_add_test(NAME test_corrupt_corpus
  SOURCES test_corrupt_corpus.c corrupt_gguf.c corrupt_hf.c
  LABELS fuzz e2e)
target_link_libraries(test_corrupt_corpus PRIVATE rlx_cli_obj)

# Resource limits: a context too large for host memory is refused up front (CPU backend).
rlx_add_test(NAME test_resource_limits SOURCES test_resource_limits.c LABELS unit e2e ARGS ${RLX_CLI})
