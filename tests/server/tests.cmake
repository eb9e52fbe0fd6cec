# rlx serve (server/): the request parser, the text path, and the server end to end.
rlx_add_test(NAME test_server_text SOURCES test_server_text.c LABELS unit)
target_link_libraries(test_server_text PRIVATE rlx_server)
rlx_add_test(NAME test_server_request SOURCES test_server_request.c LABELS unit)
target_link_libraries(test_server_request PRIVATE rlx_server)
