# Chat templates (include/rlx/chat_template.h, loader/chat_template.c, loader/jinja_*.c).
# The fuzz target tests/fuzz/fuzz_chat_template.c is picked up by fuzz.cmake.
rlx_add_test(NAME test_chat_template_render SOURCES test_chat_template_render.c LABELS unit parity)
rlx_add_test(NAME test_chat_template_unit SOURCES test_chat_template_unit.c LABELS unit)
rlx_add_test(NAME test_chat_template_errors SOURCES test_chat_template_errors.c LABELS unit)
