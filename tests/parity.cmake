# Sampling, the validation CLI (rlx logits / rlx generate) and the parity matrix against the
# fixtures (../shared/fixtures). Families run as separate tests so failures localise and
# ctest -j parallelises.
rlx_add_test(NAME test_sampling SOURCES test_sampling.c LABELS unit)
