rlx_add_script_test(NAME cli_inspect SCRIPT cli_inspect.sh LABELS e2e)
