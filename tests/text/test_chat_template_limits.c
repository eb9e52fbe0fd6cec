/* Hostile templates against the interpreter's bounds: values nested far past the depth limit
 * (built in a loop, so the template itself is small), a namespace that holds itself, source that
 * nests without end, and integer arithmetic at the edges of 64 bits. Each must end in an error
 * that names the problem, or in Python's own answer; never a crash, a hang or undefined
 * behaviour. Values just inside the limit still render, and their text is built here
 * independently: "[" * n + "1" + "]" * n is what Python prints for a list nested n deep. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx/chat_template.h"
#include "test_util.h"
#include "text/template/jinja_value.h"

/* Renders tpl (one user message) into *out (NULL on failure; the caller frees it). */
static rlx_status render(const char *tpl, char **out) {
    rlx_chat_template *t = NULL;
    *out = NULL;
    RLX_TRY(rlx_chat_template_parse(tpl, strlen(tpl), "t", &t));
    rlx_chat_message m[] = {{"user", "hi", NULL}};
    rlx_status s = rlx_chat_template_render(t, m, 1, NULL, out, NULL);
    rlx_chat_template_destroy(t);
    return s;
}

static rlx_status render_only(const char *tpl) {
    char *out;
    rlx_status s = render(tpl, &out);
    free(out);
    return s;
}

static void expect_text(const char *tpl, const char *want) {
    char *out = NULL;
    if (T_OK(render(tpl, &out)))
        T_CHECK(strcmp(out, want) == 0, "template %.80s...: got '%.120s', want '%.120s'", tpl, out, want);
    free(out);
}

#define EXPECT_ERR(tpl, code, needle) T_ERR(render_only(tpl), code, needle)

/* A template that nests ns.a `depth` times, as a list ([ns.a]) or a dict ({'k': ns.a}), then
 * appends `tail`. Also builds ns.b the same way: an equal value that is a different object. */
static char *deep_template(int depth, bool dict, const char *tail) {
    const char *wrap = dict ? "{'k': ns.%c}" : "[ns.%c]";
    char a[32], b[32];
    snprintf(a, sizeof a, wrap, 'a');
    snprintf(b, sizeof b, wrap, 'b');
    size_t n = strlen(tail) + 256;
    char *t = malloc(n);
    snprintf(t, n,
             "{%% set ns = namespace(a=1, b=1) %%}{%% for i in range(%d) %%}{%% set ns.a = %s %%}"
             "{%% set ns.b = %s %%}{%% endfor %%}%s",
             depth, a, b, tail);
    return t;
}

/* open * n + middle + close * n, the text Python prints for such a value */
static char *nested_text(int n, const char *open, const char *middle, const char *close) {
    size_t len = (strlen(open) + strlen(close)) * (size_t)n + strlen(middle) + 1;
    char *s = malloc(len), *p = s;
    for (int i = 0; i < n; i++) p += sprintf(p, "%s", open);
    p += sprintf(p, "%s", middle);
    for (int i = 0; i < n; i++) p += sprintf(p, "%s", close);
    return s;
}

static void deep_err(int depth, bool dict, const char *tail, const char *needle) {
    char *t = deep_template(depth, dict, tail);
    T_ERR(render_only(t), RLX_ERR_INVALID_ARGUMENT, needle);
    free(t);
}

static void deep_text(int depth, bool dict, const char *tail, const char *want) {
    char *t = deep_template(depth, dict, tail);
    expect_text(t, want);
    free(t);
}

/* Every recursive walk over values stops at the one depth limit with an error naming it. */
static void deep_values(void) {
    const int deep = 50000;
    deep_err(deep, false, "{{ ns.a }}", "printing a value: the value nests deeper than 1000 levels");
    deep_err(deep, false, "{{ ns.a|string }}", "nests deeper than 1000 levels");
    deep_err(deep, false, "{{ [ns.a]|join }}", "nests deeper than 1000 levels");
    deep_err(deep, false, "{{ ns.a ~ '' }}", "nests deeper than 1000 levels");
    deep_err(deep, false, "{{ raise_exception(ns.a) }}", "nests deeper than 1000 levels");
    deep_err(deep, false, "{{ ns.a == ns.b }}", "comparing values: the value nests deeper than 1000 levels");
    deep_err(deep, false, "{{ ns.a != ns.b }}", "comparing values");
    deep_err(deep, false, "{{ ns.a is eq(ns.b) }}", "comparing values");
    deep_err(deep, false, "{{ ns.a in [ns.b] }}", "comparing values");
    deep_err(deep, false, "{{ ns.a < ns.b }}", "ordering values: the value nests deeper than 1000 levels");
    deep_err(deep, false, "{{ [ns.a, ns.b]|sort }}", "ordering values");
    deep_err(deep, false, "{{ {'x': ns.a, 'y': ns.b}|dictsort(by='value') }}", "ordering values");
    deep_err(deep, false, "{{ ns.a|tojson }}", "tojson: the value nests deeper than 1000 levels");
    deep_err(deep, true, "{{ ns.a }}", "printing a value: the value nests deeper than 1000 levels");
    deep_err(deep, true, "{{ ns.a == ns.b }}", "comparing values");
    deep_err(deep, true, "{{ ns.a|tojson(indent=2) }}", "tojson: the value nests deeper than 1000 levels");
    deep_err(deep, true, "{{ ns.a|dictsort }}", "nests deeper than 1000 levels");

    /* one past the limit fails; at the limit every walk still gives Python's answer */
    deep_err(RLX_JINJA_MAX_DEPTH + 1, false, "{{ ns.a }}", "nests deeper than 1000 levels");
    deep_err(RLX_JINJA_MAX_DEPTH + 1, false, "{{ ns.a == ns.b }}", "nests deeper than 1000 levels");
    deep_err(RLX_JINJA_MAX_DEPTH + 1, false, "{{ ns.a|tojson }}", "nests deeper than 1000 levels");
    const int n = RLX_JINJA_MAX_DEPTH;
    char *list = nested_text(n, "[", "1", "]");
    deep_text(n, false, "{{ ns.a }}", list);
    deep_text(n, false, "{{ ns.a|tojson }}", list);
    deep_text(n, false, "{{ ns.a|string }}", list);
    deep_text(n, false, "{{ [ns.a]|join }}", list);
    free(list);
    deep_text(n, false, "{{ ns.a == ns.b }} {{ ns.a < ns.b }} {{ ns.a in [ns.b] }} {{ [ns.b, ns.a]|sort|length }}",
              "True False True 2");
    char *dict = nested_text(n, "{'k': ", "1", "}");
    deep_text(n, true, "{{ ns.a }}", dict);
    free(dict);
    char *json = nested_text(n, "{\"k\": ", "1", "}");
    deep_text(n, true, "{{ ns.a|tojson }}", json);
    free(json);
}

/* JSON from the caller (extra_vars_json, a message's extra_json) nests under the same bound. */
static void deep_json(void) {
    rlx_chat_template *t = NULL;
    const char *tpl = "{{ x }}|{{ messages[0].y|tojson }}";
    if (!T_OK(rlx_chat_template_parse(tpl, strlen(tpl), "t", &t))) return;
    char *inner = nested_text(RLX_JINJA_MAX_DEPTH - 1, "[", "1", "]"), *deeper = nested_text(1500, "[", "1", "]");
    size_t n = strlen(deeper) + 64;
    char *vars = malloc(n), *extra = malloc(n), *want = malloc(2 * n), *out = NULL;
    /* x is the object's field: inside the object, the list may nest 999 deep */
    snprintf(vars, n, "{\"x\": %s}", inner);
    snprintf(extra, n, "{\"y\": %s}", inner);
    snprintf(want, 2 * n, "%s|%s", inner, inner);
    rlx_chat_message m = {"user", "hi", extra};
    rlx_chat_render_opts o = {.extra_vars_json = vars};
    if (T_OK(rlx_chat_template_render(t, &m, 1, &o, &out, NULL)))
        T_CHECK(strcmp(out, want) == 0, "JSON nested %d deep did not render as itself", RLX_JINJA_MAX_DEPTH - 1);
    free(out);
    snprintf(vars, n, "{\"x\": %s}", deeper);
    T_ERR(rlx_chat_template_render(t, &m, 1, &o, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "extra_vars_json: field 'x': converting JSON: the value nests deeper than 1000 levels");
    snprintf(vars, n, "{}");
    snprintf(extra, n, "{\"y\": %s}", deeper);
    T_ERR(rlx_chat_template_render(t, &m, 1, &o, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "chat message 0: field 'y': converting JSON: the value nests deeper than 1000 levels");
    free(inner), free(deeper), free(vars), free(extra), free(want);
    rlx_chat_template_destroy(t);
}

/* A namespace can hold itself (`set ns.a = ns`); printing it meets itself and says so. The render's
 * arena owns every value, so freeing the cycle is freeing the arena (LeakSanitizer checks). */
static void cycles(void) {
    const char *self = "{% set ns = namespace(a=1) %}{% set ns.a = ns %}";
    char t[256];
    snprintf(t, sizeof t, "%s{{ ns }}", self);
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "t:1:49: printing a value: it contains itself (a cycle");
    snprintf(t, sizeof t, "%s{{ ns|string }}", self);
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "cycle");
    snprintf(t, sizeof t, "%s{{ [ns]|join(', ') }}", self);
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "cycle");
    snprintf(t, sizeof t, "%s{{ 'x' ~ ns }}", self);
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "cycle");
    /* a longer cycle: ns -> list -> dict -> ns */
    EXPECT_ERR("{% set ns = namespace(a=1) %}{% set ns.a = [{'k': ns}] %}{{ ns.a }}", RLX_ERR_INVALID_ARGUMENT, "cycle");
    EXPECT_ERR("{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b %}{{ a }}", RLX_ERR_INVALID_ARGUMENT,
               "cycle");
    /* namespaces are not JSON; == on them is identity (Python's default), so neither walks the cycle */
    snprintf(t, sizeof t, "%s{{ ns|tojson }}", self);
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "not JSON serializable");
    snprintf(t, sizeof t, "%s{{ ns == ns }} {{ ns.a == ns }} {{ [ns] == [ns.a] }} {{ ns in [ns] }}", self);
    expect_text(t, "True True True True");
    /* attributes still read through the cycle */
    snprintf(t, sizeof t, "%s{%% set ns.v = 7 %%}{{ ns.a.a.a.v }}", self);
    expect_text(t, "7");
}

/* The template source itself nesting without end: the parser's bounds, or evaluation's. */
static void deep_source(void) {
    const int n = 100000;
    char *t = malloc((size_t)n * 24 + 64);
    char *p = t + sprintf(t, "{{ ");
    for (int i = 0; i < n; i++) *p++ = '(';
    strcpy(p, "1 }}");
    EXPECT_ERR(t, RLX_ERR_BAD_FILE, "brackets nest deeper than 256 levels");
    p = t + sprintf(t, "{{ ");
    for (int i = 0; i < n; i++) p += sprintf(p, "- ");
    strcpy(p, "1 }}");
    EXPECT_ERR(t, RLX_ERR_BAD_FILE, "template nests deeper than 128 levels");
    p = t;
    for (int i = 0; i < n; i++) p += sprintf(p, "{%% if 1 %%}");
    strcpy(p, "x");
    EXPECT_ERR(t, RLX_ERR_BAD_FILE, "template nests deeper than 128 levels");
    /* flat in the source, deep to evaluate: filter, item and call chains */
    p = t + sprintf(t, "{{ 1");
    for (int i = 0; i < n; i++) p += sprintf(p, "|string");
    strcpy(p, " }}");
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "evaluation nests deeper than 1000 levels");
    p = t + sprintf(t, "{{ messages");
    for (int i = 0; i < n; i++) p += sprintf(p, "[0]");
    strcpy(p, " }}");
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "evaluation nests deeper than 1000 levels");
    /* a filter applying filters: map('map', 'map', ...) recurses once per argument */
    p = t + sprintf(t, "{{ 'a'|map('map'");
    for (int i = 0; i < n; i++) p += sprintf(p, ", 'map'");
    strcpy(p, ")|list }}");
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "evaluation nests deeper than 1000 levels");
    /* 100,000 keyword arguments: the duplicate check is quadratic, so it is charged as steps */
    p = t + sprintf(t, "{{ dict(");
    for (int i = 0; i < n; i++) p += sprintf(p, "%sk%d=1", i ? ", " : "", i);
    strcpy(p, ")|length }}");
    EXPECT_ERR(t, RLX_ERR_INVALID_ARGUMENT, "steps");
    /* inside the bounds: 400 chained filters are 400 levels */
    p = t + sprintf(t, "{{ 12");
    for (int i = 0; i < 400; i++) p += sprintf(p, "|string");
    strcpy(p, " }}");
    expect_text(t, "12");
    free(t);
}

/* 64-bit arithmetic at its edges: Python's answer where it fits, an error naming the overflow
 * where it does not. Expected values are Python 3's (ints are unbounded there). */
static void arithmetic(void) {
    /* slices with extreme bounds and steps: [1,2,3][::-2**63] == [3], [::2**63-1] == [1] */
    expect_text("{{ [1,2,3][::-9223372036854775807 - 1] }}", "[3]");
    expect_text("{{ [1,2,3][::9223372036854775807] }}", "[1]");
    expect_text("{{ 'abc'[::-9223372036854775807 - 1] }}", "c");
    expect_text("{{ [1,2,3][-9223372036854775807 - 1:9223372036854775807] }}", "[1, 2, 3]");
    expect_text("{{ [1,2,3][9223372036854775807:-9223372036854775807 - 1:-1] }}", "[3, 2, 1]");
    expect_text("{{ [1,2,3][-9223372036854775807 - 1:9223372036854775807:-9223372036854775807 - 1] }}", "[]");
    EXPECT_ERR("{{ [1,2,3][::0] }}", RLX_ERR_INVALID_ARGUMENT, "slice step cannot be zero");
    /* unary minus, abs, // and % at INT64_MIN */
    EXPECT_ERR("{{ -(-9223372036854775807 - 1) }}", RLX_ERR_INVALID_ARGUMENT, "integer overflow in '-'");
    EXPECT_ERR("{{ (-9223372036854775807 - 1)|abs }}", RLX_ERR_INVALID_ARGUMENT, "abs: integer overflow");
    EXPECT_ERR("{{ (-9223372036854775807 - 1) // -1 }}", RLX_ERR_INVALID_ARGUMENT, "integer overflow in '//'");
    expect_text("{{ (-9223372036854775807 - 1) % -1 }} {{ 7 % -1 }} {{ -7 // 2 }} {{ -7 % 2 }} {{ 7 // -2 }}",
                "0 0 -4 1 -4");
    EXPECT_ERR("{{ 7 % 0 }}", RLX_ERR_INVALID_ARGUMENT, "modulo by zero");
    EXPECT_ERR("{{ 7 // 0 }}", RLX_ERR_INVALID_ARGUMENT, "division or modulo by zero");
    EXPECT_ERR("{{ 7.0 % 0 }}", RLX_ERR_INVALID_ARGUMENT, "float division by zero");
    /* ** and * */
    EXPECT_ERR("{{ 2 ** 63 }}", RLX_ERR_INVALID_ARGUMENT, "integer overflow in '**'");
    EXPECT_ERR("{{ 3 ** 9223372036854775807 }}", RLX_ERR_INVALID_ARGUMENT, "integer overflow in '**'");
    expect_text("{{ (-2) ** 63 }} {{ 0 ** 9223372036854775807 }} {{ (-1) ** 9223372036854775807 }} {{ 2 ** -1 }}",
                "-9223372036854775808 0 -1 0.5");
    EXPECT_ERR("{{ 9223372036854775807 * 2 }}", RLX_ERR_INVALID_ARGUMENT, "integer overflow in '*'");
    EXPECT_ERR("{{ -9223372036854775807 - 2 }}", RLX_ERR_INVALID_ARGUMENT, "integer overflow in '-'");
    /* repetition: the size is checked before any memory is taken */
    EXPECT_ERR("{{ 'x' * 9223372036854775807 }}", RLX_ERR_OUT_OF_MEMORY, "template memory limit");
    EXPECT_ERR("{{ [1, 2] * 9223372036854775807 }}", RLX_ERR_OUT_OF_MEMORY, "template memory limit");
    EXPECT_ERR("{{ ('ab' * 1000) * 4611686018427387904 }}", RLX_ERR_OUT_OF_MEMORY, "template memory limit");
    expect_text("[{{ [1] * (-9223372036854775807 - 1) }}|{{ '' * 9223372036854775807 }}|{{ [] * 9223372036854775807 }}]",
                "[[]||[]]");
    /* range(): the count of 2**64 - 1 numbers is refused, not allocated; extreme steps are exact */
    EXPECT_ERR("{{ range(-9223372036854775807 - 1, 9223372036854775807)|length }}", RLX_ERR_INVALID_ARGUMENT,
               "range() of 18446744073709551615 numbers");
    expect_text("{{ range(0, 10, -9223372036854775807 - 1)|list }} "
                "{{ range(9223372036854775807, -9223372036854775807 - 1, -9223372036854775807 - 1)|list }}",
                "[] [9223372036854775807, -1]");
    /* the int filter: numbers past 64 bits are an error (Python would give a big int), never clamped */
    EXPECT_ERR("{{ '99999999999999999999'|int }}", RLX_ERR_INVALID_ARGUMENT, "int: '99999999999999999999' does not fit");
    EXPECT_ERR("{{ ('1' * 100000)|int }}", RLX_ERR_INVALID_ARGUMENT, "does not fit in a 64-bit integer");
    EXPECT_ERR("{{ 1e300|int }}", RLX_ERR_INVALID_ARGUMENT, "int: 1e+300 does not fit");
    EXPECT_ERR("{{ '1e300'|int }}", RLX_ERR_INVALID_ARGUMENT, "int: '1e300' does not fit");
    EXPECT_ERR("{{ (1e308 * 10)|int }}", RLX_ERR_INVALID_ARGUMENT, "int: inf does not fit"); /* OverflowError */
    EXPECT_ERR("{{ 9223372036854775808.0|int }}", RLX_ERR_INVALID_ARGUMENT, "does not fit");
    /* NaN is jinja2's ValueError: the default */
    expect_text("{{ (1e308 * 10 - 1e308 * 10)|int(3) }} {{ 'nan'|int(7) }} {{ '0x10'|int(5) }} {{ 'abc'|int }}",
                "3 7 5 0");
    expect_text("{{ '-9223372036854775808'|int }} {{ ' 42 '|int }} {{ '4.7'|int }} {{ '-4.7'|int }} {{ '1e5'|int }}",
                "-9223372036854775808 42 4 -4 100000");
    expect_text("{{ -9223372036854775808.0|int }} {{ 9223372036854774784.0|int }} {{ ('0' * 1000 ~ '12')|int }}",
                "-9223372036854775808 9223372036854774784 12");
    expect_text("{{ '1e999'|float }} {{ '0x10'|float(2.5) }} {{ ' 2.5 '|float }}", "inf 2.5 2.5");
}

/* A caller's step bound near 2**64 must not wrap the work range() is charged (count x 64 bytes). */
static void huge_step_bound(void) {
    rlx_chat_template *t = NULL;
    const char *tpl = "{{ range(4611686018427387904)|length }}";
    if (!T_OK(rlx_chat_template_parse(tpl, strlen(tpl), "t", &t))) return;
    rlx_chat_message m = {"user", "hi", NULL};
    rlx_chat_render_opts o = {.max_steps = UINT64_MAX};
    char *out = NULL;
    T_ERR(rlx_chat_template_render(t, &m, 1, &o, &out, NULL), RLX_ERR_INVALID_ARGUMENT,
          "range() of 4611686018427387904 numbers is more than the step limit allows");
    rlx_chat_template_destroy(t);
}

int main(void) {
    deep_values();
    deep_json();
    cycles();
    deep_source();
    arithmetic();
    huge_step_bound();
    return t_summary("test_chat_template_limits");
}
