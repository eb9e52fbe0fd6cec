rlx_add_script_test(NAME cli_inspect SCRIPT cli_inspect.sh LABELS e2e)
rlx_add_test(NAME test_runner_incremental SOURCES test_runner_incremental.c LABELS unit)
rlx_add_script_test(NAME cli_text SCRIPT cli_text.sh LABELS e2e)
