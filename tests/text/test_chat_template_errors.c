/* Bad templates and bad input: every failure is a status whose message names the problem and,
 * for template errors, the line and column (1-based; the column counts characters), as
 * "origin:line:col: ...". Runaway templates stop at a bound instead of hanging or crashing.
 * The positions are counted by hand from the template strings below. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/chat_template.h"
#include "test_util.h"

static rlx_status parse(const char *tpl) {
    rlx_chat_template *t = NULL;
    rlx_status s = rlx_chat_template_parse(tpl, strlen(tpl), "t", &t);
    rlx_chat_template_destroy(t);
    return s;
}

static rlx_status render(const char *tpl, const rlx_chat_render_opts *o) {
    rlx_chat_template *t = NULL;
    RLX_TRY(rlx_chat_template_parse(tpl, strlen(tpl), "t", &t));
    rlx_chat_message m[] = {{"user", "hi", NULL}};
    char *out = NULL;
    rlx_status s = rlx_chat_template_render(t, m, 1, o, &out, NULL);
    free(out);
    rlx_chat_template_destroy(t);
    return s;
}

#define PARSE_ERR(tpl, code, needle) T_ERR(parse(tpl), code, needle)
#define RENDER_ERR(tpl, opts, code, needle) T_ERR(render(tpl, opts), code, needle)

static void syntax_errors(void) {
    PARSE_ERR("{{ x", RLX_ERR_BAD_FILE, "t:1:1: unterminated tag: '{{' has no matching '}}'");
    PARSE_ERR("ab\n  {% if x", RLX_ERR_BAD_FILE, "t:2:3: unterminated tag: '{%'");
    PARSE_ERR("{# note", RLX_ERR_BAD_FILE, "t:1:1: unterminated comment");
    PARSE_ERR("{{ 'abc }}", RLX_ERR_BAD_FILE, "t:1:4: unterminated string literal");
    PARSE_ERR("{% raw %}x", RLX_ERR_BAD_FILE, "t:1:1: unterminated raw block");
    PARSE_ERR("x\n{% if a %}\nb", RLX_ERR_BAD_FILE, "the block opened at 2:1 needs '{% endif %}'");
    PARSE_ERR("{% for a in b %}{% endif %}", RLX_ERR_BAD_FILE, "t:1:20: unexpected '{% endif %}', expected 'else' or 'endfor'");
    PARSE_ERR("{% endfor %}", RLX_ERR_BAD_FILE, "t:1:4: unexpected '{% endfor %}' with no open block");
    PARSE_ERR("line\n  {{ x | frobnicate }}", RLX_ERR_BAD_FILE, "t:2:10: unknown filter 'frobnicate'");
    PARSE_ERR("{{ x is frobby }}", RLX_ERR_BAD_FILE, "t:1:9: unknown test 'frobby'");
    PARSE_ERR("{% frobnicate %}", RLX_ERR_BAD_FILE, "t:1:4: unknown statement '{% frobnicate %}'");
    PARSE_ERR("{{ 1 + }}", RLX_ERR_BAD_FILE, "t:1:8: unexpected '}}', expected an expression");
    PARSE_ERR("{{ (1 + }}", RLX_ERR_BAD_FILE, "t:1:9: unexpected '}', expected ')'");
    PARSE_ERR("{{ a ) }}", RLX_ERR_BAD_FILE, "t:1:6: unexpected ')'");
    PARSE_ERR("{{ [1, 2) }}", RLX_ERR_BAD_FILE, "t:1:9: unexpected ')', expected ']'");
    PARSE_ERR("{{ a $ b }}", RLX_ERR_BAD_FILE, "t:1:6: unexpected character '$'");
    PARSE_ERR("{% break %}", RLX_ERR_BAD_FILE, "'{% break %}' outside a for-loop");
    PARSE_ERR("{% macro f(a=1, b) %}{% endmacro %}", RLX_ERR_BAD_FILE, "parameter without a default");
    PARSE_ERR("{% set 1 = 2 %}", RLX_ERR_BAD_FILE, "cannot assign");
    PARSE_ERR("{{ f(a=1, 2) }}", RLX_ERR_BAD_FILE, "positional argument follows keyword argument");
    PARSE_ERR("{{ 99999999999999999999 }}", RLX_ERR_BAD_FILE, "does not fit in 64 bits");
    PARSE_ERR("{{ '\\x4' }}", RLX_ERR_BAD_FILE, "truncated \\x escape");
    /* nesting is bounded, so hostile input cannot exhaust the stack */
    char deep[2100] = "{{ ";
    for (int i = 0; i < 1000; i++) strcat(deep, "(");
    PARSE_ERR(deep, RLX_ERR_BAD_FILE, "brackets nest deeper than 256 levels");
    char nots[6100] = "{{ ";
    for (int i = 0; i < 1000; i++) strcat(nots, "not ");
    strcat(nots, "x }}");
    PARSE_ERR(nots, RLX_ERR_BAD_FILE, "template nests deeper than 128 levels");
}

static void unsupported(void) {
    PARSE_ERR("{% include 'other.jinja' %}", RLX_ERR_UNSUPPORTED, "t:1:4: unsupported statement '{% include %}'");
    PARSE_ERR("a\n{% call m() %}x{% endcall %}", RLX_ERR_UNSUPPORTED, "t:2:4: unsupported statement '{% call %}'");
    PARSE_ERR("{{ x | wordwrap }}", RLX_ERR_UNSUPPORTED, "t:1:8: unsupported filter 'wordwrap'");
    PARSE_ERR("{{ x is escaped }}", RLX_ERR_UNSUPPORTED, "t:1:9: unsupported test 'escaped'");
    PARSE_ERR("{% for x in y recursive %}{% endfor %}", RLX_ERR_UNSUPPORTED, "recursive for-loops");
    PARSE_ERR("{{ f(*args) }}", RLX_ERR_UNSUPPORTED, "argument unpacking");
    RENDER_ERR("{{ 'a'.zfill(3) }}", NULL, RLX_ERR_UNSUPPORTED, "t:1:7: unsupported method 'zfill' on a value of type 'str'");
    RENDER_ERR("{{ '%s' % 1 }}", NULL, RLX_ERR_UNSUPPORTED, "printf-style string formatting");
    RENDER_ERR("{% for x in [1] %}{{ loop.changed(x) }}{% endfor %}", NULL, RLX_ERR_UNSUPPORTED, "loop.changed");
}

static void runtime_errors(void) {
    /* raise_exception carries the template's message */
    RENDER_ERR("{{ raise_exception('boom') }}", NULL, RLX_ERR_INVALID_ARGUMENT, "t:1:4: the template raised an exception: boom");
    RENDER_ERR("x\n{% if messages[0].role == 'user' %}{{ raise_exception('Conversation roles must alternate') }}{% endif %}",
               NULL, RLX_ERR_INVALID_ARGUMENT, "t:2:39: the template raised an exception: Conversation roles must alternate");
    RENDER_ERR("{{ nothing.attr }}", NULL, RLX_ERR_INVALID_ARGUMENT, "'nothing' is undefined (reading its attribute 'attr')");
    RENDER_ERR("{{ messages[0].nope.deeper }}", NULL, RLX_ERR_INVALID_ARGUMENT, "'nope' is undefined");
    RENDER_ERR("{{ nothing() }}", NULL, RLX_ERR_INVALID_ARGUMENT, "'nothing' is undefined (called as a function)");
    RENDER_ERR("{{ 1 + 'a' }}", NULL, RLX_ERR_INVALID_ARGUMENT, "t:1:6: unsupported operand types for +: 'int' and 'str'");
    /* ~ binds tighter than + (jinja2's grammar): ('2' ~ '3') + 4 adds a str and an int */
    RENDER_ERR("{{ 2 ~ 3 + 4 }}", NULL, RLX_ERR_INVALID_ARGUMENT, "unsupported operand types for +: 'str' and 'int'");
    RENDER_ERR("{{ 1 < 'a' }}", NULL, RLX_ERR_INVALID_ARGUMENT, "cannot order a value of type 'int' against one of type 'str'");
    RENDER_ERR("{{ 1 // 0 }}", NULL, RLX_ERR_INVALID_ARGUMENT, "division or modulo by zero");
    RENDER_ERR("{{ 9223372036854775807 + 1 }}", NULL, RLX_ERR_INVALID_ARGUMENT, "integer overflow");
    RENDER_ERR("{% set a = 1 %}{% set a.b = 2 %}", NULL, RLX_ERR_INVALID_ARGUMENT, "only namespace() objects take attributes");
    RENDER_ERR("{% for a, b in [1] %}{% endfor %}", NULL, RLX_ERR_INVALID_ARGUMENT, "cannot unpack");
    RENDER_ERR("{% for a in 5 %}{% endfor %}", NULL, RLX_ERR_INVALID_ARGUMENT, "'int' is not iterable");
    RENDER_ERR("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", NULL, RLX_ERR_INVALID_ARGUMENT, "macro 'f' takes at most 1 arguments (2 given)");
    RENDER_ERR("{% macro f(a) %}{% endmacro %}{{ f(b=1) }}", NULL, RLX_ERR_INVALID_ARGUMENT, "macro 'f' has no parameter 'b'");
    RENDER_ERR("{{ 'a'|trim(1, 2) }}", NULL, RLX_ERR_INVALID_ARGUMENT, "filter 'trim' takes at most 1 positional arguments");
    RENDER_ERR("{{ 5|items }}", NULL, RLX_ERR_INVALID_ARGUMENT, "can only get item pairs from a mapping");
    RENDER_ERR("{{ nothing|tojson }}", NULL, RLX_ERR_INVALID_ARGUMENT, "not JSON serializable");
    RENDER_ERR("{{ 'a,b'.split('') }}", NULL, RLX_ERR_INVALID_ARGUMENT, "empty separator");
    RENDER_ERR("{{ {[1]: 2} }}", NULL, RLX_ERR_UNSUPPORTED, "t:1:5: unsupported dict key of type 'list'");
    RENDER_ERR("{{ strftime_now('%Q') }}", NULL, RLX_ERR_UNSUPPORTED, "unsupported directive '%Q'");
}

/* Bounds: each stops the render with an error that names it. */
static void limits(void) {
    rlx_chat_render_opts small = {.max_output_bytes = 100, .max_memory_bytes = 1 << 20, .max_steps = 100000};
    RENDER_ERR("{% for i in range(1000) %}0123456789{% endfor %}", &small, RLX_ERR_INVALID_ARGUMENT, "output limit of 100 bytes");
    RENDER_ERR("{% macro m() %}{% for i in range(1000) %}0123456789{% endfor %}{% endmacro %}{{ m() }}", &small,
               RLX_ERR_INVALID_ARGUMENT, "output limit");
    RENDER_ERR("{% set r = range(1000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}", &small,
               RLX_ERR_INVALID_ARGUMENT, "more than 100000 steps");
    RENDER_ERR("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", &small,
               RLX_ERR_OUT_OF_MEMORY, "template memory limit");
    RENDER_ERR("{{ 'x' * 1000000000000 }}", &small, RLX_ERR_OUT_OF_MEMORY, "template memory limit");
    RENDER_ERR("{{ range(1000000000000)|length }}", NULL, RLX_ERR_INVALID_ARGUMENT, "more than the step limit");
    /* shared sublists make a small value huge to walk: == and ordering count what they visit */
    RENDER_ERR("{% set a = [[[0] * 100] * 100] * 100 %}{{ a == a }}", &small, RLX_ERR_INVALID_ARGUMENT, "steps");
    RENDER_ERR("{% set a = [[[0] * 100] * 100] * 100 %}{{ a < a }}", &small, RLX_ERR_INVALID_ARGUMENT, "steps");
    RENDER_ERR("{% set a = [[[0] * 100] * 100] * 100 %}{{ a in [a] }}", &small, RLX_ERR_INVALID_ARGUMENT, "steps");
    RENDER_ERR("{{ ('x' * 100000)|length }}{{ '' * 1000000000000 }}{% for i in range(100000) %}{% endfor %}", &small,
               RLX_ERR_INVALID_ARGUMENT, "steps");
    RENDER_ERR("{% macro r() %}{{ r() }}{% endmacro %}{{ r() }}", NULL, RLX_ERR_INVALID_ARGUMENT,
               "evaluation nests deeper than 1000 levels");
    /* a long left-leaning chain parses (it is not nested) and its evaluation depth is bounded */
    static char chain[40000];
    strcpy(chain, "{{ 1");
    for (int i = 0; i < 5000; i++) strcat(chain, " + 1");
    strcat(chain, " }}");
    RENDER_ERR(chain, NULL, RLX_ERR_INVALID_ARGUMENT, "evaluation nests deeper than");
}

static void api_errors(void) {
    rlx_chat_template *t = NULL;
    const char *tpl = "{{ messages[0].content }}";
    if (!T_OK(rlx_chat_template_parse(tpl, strlen(tpl), NULL, &t))) return;
    char *out = NULL;
    rlx_chat_message no_role = {NULL, "x", NULL};
    T_ERR(rlx_chat_template_render(t, &no_role, 1, NULL, &out, NULL), RLX_ERR_INVALID_ARGUMENT, "chat message 0 has no role");
    rlx_chat_message bad_json[] = {{"user", "a", NULL}, {"user", "x", "{not json"}};
    T_ERR(rlx_chat_template_render(t, bad_json, 2, NULL, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "chat message 1's extra_json must be a JSON object");
    rlx_chat_message not_object = {"user", "x", "[1]"};
    T_ERR(rlx_chat_template_render(t, &not_object, 1, NULL, &out, NULL), RLX_ERR_INVALID_ARGUMENT, "must be a JSON object");
    rlx_chat_render_opts o = {.extra_vars_json = "3"};
    T_ERR(rlx_chat_template_render(t, &no_role + 0, 0, &o, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "extra_vars_json must be a JSON object");
    T_ERR(rlx_chat_template_render(t, NULL, 1, NULL, &out, NULL), RLX_ERR_INVALID_ARGUMENT, "required");
    T_CHECK(out == NULL, "output set on failure");
    rlx_chat_template_destroy(t);
    T_ERR(rlx_chat_template_parse("{{", 2, "named.jinja", &t), RLX_ERR_BAD_FILE, "named.jinja:1:1:");
    /* a template with an embedded NUL is text like any other, bounded by its length */
    T_ERR(rlx_chat_template_parse("{{ \0 }}", 7, "nul", &t), RLX_ERR_BAD_FILE, "nul:1:4: unexpected byte 0x00");

    T_ERR(rlx_chat_template_open("/nonexistent/rlx/template.jinja", &t), RLX_ERR_NOT_FOUND, "/nonexistent/rlx/template.jinja");
    t_require_fixture("stories260K/stories260K.gguf");
    T_ERR(rlx_chat_template_open(t_fixture("stories260K/stories260K.gguf"), &t), RLX_ERR_NOT_FOUND,
          "has no tokenizer.chat_template");
    T_ERR(rlx_chat_template_open(t_fixture("stories260K"), &t), RLX_ERR_NOT_FOUND, "has no chat template");
    /* the bad template's own file name leads the message */
    t_require_fixture("templates/Qwen-QwQ-32B.jinja");
    T_OK(rlx_chat_template_open(t_fixture("templates/Qwen-QwQ-32B.jinja"), &t));
    rlx_chat_template_destroy(t);
}

/* Gemma 2 refuses a system turn through raise_exception (its documented behaviour). */
static void vendor_exception(void) {
    t_require_fixture("templates/google-gemma-2-2b-it.jinja");
    rlx_chat_template *t;
    if (!T_OK(rlx_chat_template_open(t_fixture("templates/google-gemma-2-2b-it.jinja"), &t))) return;
    rlx_chat_message m[] = {{"system", "s", NULL}, {"user", "u", NULL}};
    char *out = NULL;
    T_ERR(rlx_chat_template_render(t, m, 2, NULL, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "the template raised an exception: System role not supported");
    rlx_chat_message twice[] = {{"user", "a", NULL}, {"user", "b", NULL}};
    T_ERR(rlx_chat_template_render(t, twice, 2, NULL, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "Conversation roles must alternate user/assistant/user/assistant/...");
    rlx_chat_template_destroy(t);
}

int main(void) {
    t_require_fixture("templates");
    syntax_errors();
    unsupported();
    runtime_errors();
    limits();
    api_errors();
    vendor_exception();
    return t_summary("test_chat_template_errors");
}
