# rlx serve (server/): the request parser, the text path, and the server end to end.
rlx_add_test(NAME test_server_text SOURCES test_server_text.c LABELS unit)
target_link_libraries(test_server_text PRIVATE rlx_server)
rlx_add_test(NAME test_server_request SOURCES test_server_request.c LABELS unit)
target_link_libraries(test_server_request PRIVATE rlx_server)
# The official openai npm client against rlx serve (npm ci of js/package-lock.json into the build
# tree; without node or the registry: SKIP, or FAIL under CI=true)
rlx_add_script_test(NAME server_openai SCRIPT server_openai.sh LABELS e2e)
set_property(TEST server_openai APPEND PROPERTY RESOURCE_LOCK server_js)
# Load (64 clients), disconnects, slowloris and dropped connections, a full queue, SIGTERM drain
rlx_add_script_test(NAME server_load SCRIPT server_load.sh LABELS e2e)
set_property(TEST server_load APPEND PROPERTY RESOURCE_LOCK server_js)
# tools/serve_bench.py (the benchmarks' load client) end to end on the story model
rlx_add_script_test(NAME server_bench SCRIPT server_bench.sh LABELS e2e)
# A multi-turn chat on the Qwen3.5 fixture: each turn computes only the tokens past its checkpoint
rlx_add_script_test(NAME server_chat_turns SCRIPT server_chat_turns.sh LABELS e2e)
# docs/DEPLOY.md's manifests lint (yamllint)
rlx_add_script_test(NAME deploy_yaml SCRIPT deploy_yaml.sh LABELS unit)
