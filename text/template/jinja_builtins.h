/* The filters, tests, methods and global functions that chat templates call, looked up by name.
 * Filters and tests: text/template/jinja_filters.c; string/dict methods and global functions:
 * text/template/jinja_methods.c. Semantics are jinja2's builtins (filters.py, tests.py, defaults.py),
 * Python's str and dict methods, and transformers' additions (tojson without HTML escaping,
 * raise_exception, strftime_now). */
#ifndef RLX_TEXT_JINJA_BUILTINS_H
#define RLX_TEXT_JINJA_BUILTINS_H

#include <stdbool.h>

#include "text/template/jinja_eval.h"

/* Index of a filter / test, or -1. */
int rlx_jinja_filter_find(const char *name);
int rlx_jinja_test_find(const char *name);
/* True for a jinja2 builtin this subset does not implement (to say "unsupported", not "unknown"). */
bool rlx_jinja_filter_is_jinja(const char *name);
bool rlx_jinja_test_is_jinja(const char *name);

rlx_status rlx_jinja_filter_apply(rlx_jinja_ctx *c, int id, rlx_jv in, const rlx_jinja_args *args, rlx_jv *out);
rlx_status rlx_jinja_test_apply(rlx_jinja_ctx *c, int id, rlx_jv in, const rlx_jinja_args *args, bool *out);

/* Calls self.name(args) for the str and dict methods templates use (strip, split, startswith,
 * get, items, ...). *found is false when self's type has no such method. */
rlx_status rlx_jinja_method_call(rlx_jinja_ctx *c, rlx_jv self, const char *name, const rlx_jinja_args *args,
                                 bool *found, rlx_jv *out);

typedef enum {
    RLX_JF_RANGE,
    RLX_JF_NAMESPACE,
    RLX_JF_DICT,
    RLX_JF_RAISE_EXCEPTION,
    RLX_JF_STRFTIME_NOW,
    RLX_JF_COUNT,
} rlx_jinja_func;

const char *rlx_jinja_func_name(rlx_jinja_func f);
rlx_status rlx_jinja_func_call(rlx_jinja_ctx *c, rlx_jinja_func f, const rlx_jinja_args *args, rlx_jv *out);

/* String operations shared by methods and filters (Python semantics; case mapping is ASCII-only,
 * other characters are left as they are). Results are arena strings. */
typedef enum { RLX_JCASE_UPPER, RLX_JCASE_LOWER, RLX_JCASE_TITLE, RLX_JCASE_CAPITALIZE } rlx_jinja_case;
rlx_status rlx_jinja_str_case(rlx_jinja_ctx *c, rlx_jv s, rlx_jinja_case mode, rlx_jv *out);
/* str.strip / lstrip / rstrip: chars NULL strips Python whitespace, else the code points in chars. */
rlx_status rlx_jinja_str_strip(rlx_jinja_ctx *c, rlx_jv s, const rlx_jv *chars, bool left, bool right, rlx_jv *out);
/* str.replace(old, new, count); count < 0 replaces all. */
rlx_status rlx_jinja_str_replace(rlx_jinja_ctx *c, rlx_jv s, rlx_jv old, rlx_jv repl, int64_t count, rlx_jv *out);

/* Argument access shared by the builtins: positional i, else keyword `name`; false if neither. */
bool rlx_jinja_arg(const rlx_jinja_args *a, size_t i, const char *name, rlx_jv *out);
/* Fails when more than max_pos positional arguments were given or a keyword is not in `names`
 * (a NULL-terminated list). `what` names the callee in the message. */
rlx_status rlx_jinja_check_args(rlx_jinja_ctx *c, const char *what, const rlx_jinja_args *a, size_t max_pos,
                                const char *const *names);

#endif
