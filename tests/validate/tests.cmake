# rlx validate (validate/, tools/cmd_validate.c; docs/VALIDATION.md) on lavapipe, the device CI has:
# the whole op sweep under the validation layer, and the mutation test of the harness itself. A
# machine without lavapipe SKIPS them (CI installs it, so there they must run).
if(RLX_VULKAN)
  # the sweep passes, lists every op of ir/ops.def with cases compared, and bad arguments exit 2
  rlx_add_script_test(NAME cli_validate SCRIPT cli_validate.sh LABELS "e2e;vulkan")
  # the test switch perturbs one op's device outputs: every op in turn, the report must fail naming
  # that op and only that op, each of its cases failed
  rlx_add_script_test(NAME validate_mutation SCRIPT validate_mutation.sh LABELS "e2e;vulkan")
  set_property(TEST cli_validate validate_mutation APPEND PROPERTY ENVIRONMENT
    "XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/vk-cache")
endif()
if(RLX_VULKAN)
  # -m on a fixture model of each family, and a weight row changed on the device's side
  rlx_add_script_test(NAME validate_models SCRIPT validate_models.sh LABELS "e2e;vulkan;parity")
  set_property(TEST validate_models APPEND PROPERTY ENVIRONMENT "XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/vk-cache")
endif()
