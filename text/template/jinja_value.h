/* Values of the Jinja subset used by chat templates (text/template/chat_template.c), the arena they live
 * in, and the Python semantics templates rely on: truthiness, ==, <, str(), repr() and json.dumps.
 *
 * Every value made while rendering lives in one arena that is freed when the render ends. Jinja
 * namespaces are mutable and can end up holding themselves; with an arena such cycles cost
 * nothing, and the arena's byte count is an exact memory bound for untrusted templates. */
#ifndef RLX_TEXT_JINJA_VALUE_H
#define RLX_TEXT_JINJA_VALUE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx/status.h"

/* How deep any recursive walk may go: over values (str(), repr(), ==, ordering, tojson, JSON
 * input) and over the template (nested evaluation, macro calls, filters calling filters). One
 * bound for all, so a hostile template meets a clear error long before the C stack runs out.
 * Real values nest a few levels; recursive macros over tool schemas a few dozen. */
#define RLX_JINJA_MAX_DEPTH 1000

typedef struct rlx_jinja_block rlx_jinja_block;

typedef struct rlx_jinja_arena {
    rlx_jinja_block *head; /* owned chain of blocks, newest first */
    size_t used;           /* bytes taken from the system, block headers included */
    size_t limit;          /* 0: unlimited */
} rlx_jinja_arena;

void rlx_jinja_arena_init(rlx_jinja_arena *a, size_t limit);
/* Zeroed memory aligned for any value; NULL when the limit would be passed or malloc fails. */
void *rlx_jinja_alloc(rlx_jinja_arena *a, size_t n);
/* n bytes of p copied, NUL-terminated; NULL as rlx_jinja_alloc. */
char *rlx_jinja_strndup(rlx_jinja_arena *a, const char *p, size_t n);
void rlx_jinja_arena_free(rlx_jinja_arena *a);

/* A growable byte buffer (malloc'd) with a size limit: template output and string building. */
typedef struct rlx_jinja_buf {
    char *p;      /* owned, NUL-terminated when n > 0 */
    size_t n, cap;
    size_t limit; /* 0: unlimited; appending past it fails */
} rlx_jinja_buf;

/* Both return false when the limit would be passed or memory runs out. */
bool rlx_jinja_buf_append(rlx_jinja_buf *b, const char *p, size_t n);
bool rlx_jinja_buf_putc(rlx_jinja_buf *b, char c);
void rlx_jinja_buf_free(rlx_jinja_buf *b);

typedef enum {
    RLX_JV_UNDEFINED, /* a missing variable, key or attribute: prints as "", iterates as empty */
    RLX_JV_NONE,
    RLX_JV_BOOL,
    RLX_JV_INT,
    RLX_JV_FLOAT,
    RLX_JV_STR,
    RLX_JV_LIST,      /* also tuples (list->tuple) */
    RLX_JV_DICT,
    RLX_JV_NAMESPACE, /* namespace(): a dict whose attributes `set ns.x = ...` may assign */
    RLX_JV_MACRO,
    RLX_JV_FUNC,      /* a global function: range, namespace, raise_exception, ... */
    RLX_JV_LOOP,      /* the `loop` variable of a for-loop */
} rlx_jv_kind;

typedef struct rlx_jv_list rlx_jv_list;
typedef struct rlx_jv_dict rlx_jv_dict;
typedef struct rlx_jv_macro rlx_jv_macro; /* defined by the evaluator */
typedef struct rlx_jv_loop rlx_jv_loop;   /* defined by the evaluator */

typedef struct rlx_jv {
    rlx_jv_kind kind;
    union {
        bool b;
        int64_t i;
        double f;
        struct {
            const char *p; /* borrowed: arena, template source or caller memory; not NUL-terminated */
            size_t n;
        } s;
        rlx_jv_list *list;         /* arena */
        rlx_jv_dict *dict;         /* arena; DICT and NAMESPACE */
        const rlx_jv_macro *macro; /* arena */
        int func;                  /* evaluator's global-function id */
        rlx_jv_loop *loop;         /* arena */
        const char *undef;         /* UNDEFINED: the name that was looked up (NUL-terminated) or NULL */
    };
} rlx_jv;

struct rlx_jv_list {
    rlx_jv *items; /* arena */
    size_t n, cap;
    bool tuple;    /* printed as (a, b) */
};

/* Insertion-ordered, as Python dicts are. Lookups are linear: template dicts are small. */
struct rlx_jv_dict {
    rlx_jv *keys, *vals; /* arena, n entries */
    size_t n, cap;
};

static inline rlx_jv rlx_jv_undefined(const char *name) { return (rlx_jv){.kind = RLX_JV_UNDEFINED, .undef = name}; }
static inline rlx_jv rlx_jv_none(void) { return (rlx_jv){.kind = RLX_JV_NONE}; }
static inline rlx_jv rlx_jv_bool(bool b) { return (rlx_jv){.kind = RLX_JV_BOOL, .b = b}; }
static inline rlx_jv rlx_jv_int(int64_t i) { return (rlx_jv){.kind = RLX_JV_INT, .i = i}; }
static inline rlx_jv rlx_jv_float(double f) { return (rlx_jv){.kind = RLX_JV_FLOAT, .f = f}; }
static inline rlx_jv rlx_jv_str(const char *p, size_t n) {
    return (rlx_jv){.kind = RLX_JV_STR, .s = {p, n}};
}
rlx_jv rlx_jv_cstr(const char *s); /* borrows s */

/* Containers: NULL / false when the arena refuses memory. */
rlx_jv_list *rlx_jv_list_new(rlx_jinja_arena *a, size_t cap);
bool rlx_jv_list_push(rlx_jinja_arena *a, rlx_jv_list *l, rlx_jv v);
rlx_jv_dict *rlx_jv_dict_new(rlx_jinja_arena *a, size_t cap);
/* Replaces an equal key. Keys are scalars (str, numbers, bool, none), so lookups stay cheap. */
bool rlx_jv_dict_set(rlx_jinja_arena *a, rlx_jv_dict *d, rlx_jv key, rlx_jv val);
rlx_jv *rlx_jv_dict_get(const rlx_jv_dict *d, rlx_jv key);                      /* NULL when missing */
rlx_jv *rlx_jv_dict_get_str(const rlx_jv_dict *d, const char *key);

/* Python's type name, for error messages: "str", "int", "list", "dict", "NoneType", ... */
const char *rlx_jv_type_name(rlx_jv v);
bool rlx_jv_truthy(rlx_jv v);
bool rlx_jv_is_number(rlx_jv v); /* int, float or bool (a Python int) */
double rlx_jv_as_double(rlx_jv v);
/* Python ==, recursive over lists and dicts; an undefined equals only an undefined. The walk
 * counts visited elements down from *budget and stops (false, *budget == 0) when it runs out:
 * values that share sublists can be far bigger to walk than to store. Values nested deeper
 * than RLX_JINJA_MAX_DEPTH are an error (RLX_ERR_INVALID_ARGUMENT), as is a spent budget. */
rlx_status rlx_jv_equal_within(rlx_jv a, rlx_jv b, bool *out, uint64_t *budget);
/* Unbounded ==, for scalars (dict keys); a container nested too deep compares unequal. */
bool rlx_jv_equal(rlx_jv a, rlx_jv b);
/* Python ordering: numbers, strings (code point order = UTF-8 byte order) and lists of those.
 * *cmp is <0, 0 or >0. An error names the two types, as Python's TypeError does, or says the
 * budget (as for rlx_jv_equal_within) ran out or the lists nest deeper than RLX_JINJA_MAX_DEPTH. */
rlx_status rlx_jv_compare(rlx_jv a, rlx_jv b, int *cmp, uint64_t *budget);

/* Python str() (strings as themselves, None, True, [1, 'a'], {'k': 1}, shortest float repr) and
 * repr() (strings quoted), appended to b. Errors: RLX_ERR_OUT_OF_MEMORY when b refuses more
 * bytes; RLX_ERR_INVALID_ARGUMENT for a value nested deeper than RLX_JINJA_MAX_DEPTH or one that
 * contains itself (a namespace holding itself is the only way to build a cycle). */
rlx_status rlx_jv_write_str(rlx_jinja_buf *b, rlx_jv v);
rlx_status rlx_jv_write_repr(rlx_jinja_buf *b, rlx_jv v);
/* str(v) as an arena string (strings are returned as they are, without a copy). */
rlx_status rlx_jv_to_str(rlx_jinja_arena *a, rlx_jv v, rlx_jv *out);

/* json.dumps(v, ensure_ascii, indent, separators, sort_keys), as transformers' tojson filter calls
 * it. indent < 0: no newlines. item_sep / key_sep NULL: Python's defaults (", " or "," with an
 * indent, and ": "). Fails on undefined, macros and functions (not JSON-serializable), and on
 * values nested deeper than RLX_JINJA_MAX_DEPTH. */
typedef struct rlx_jv_json_opts {
    int indent;
    bool ensure_ascii;
    bool sort_keys;
    const char *item_sep;
    const char *key_sep;
} rlx_jv_json_opts;
rlx_status rlx_jv_write_json(rlx_jinja_buf *b, rlx_jv v, const rlx_jv_json_opts *o);

/* A jansson value as a template value (strings copied into the arena, key order kept). */
rlx_status rlx_jv_from_json(rlx_jinja_arena *a, const json_t *j, rlx_jv *out);

/* UTF-8 helpers for Python's code-point strings. Invalid bytes count as one code point each. */
size_t rlx_jv_utf8_len(const char *p, size_t n);            /* number of code points */
size_t rlx_jv_utf8_offset(const char *p, size_t n, size_t i); /* byte offset of code point i (n if past the end) */
/* Decodes one code point at p (n > 0 bytes left); *len gets its byte length (1 for invalid bytes,
 * which decode as themselves). */
uint32_t rlx_jv_utf8_decode(const char *p, size_t n, size_t *len);
bool rlx_jv_is_space(uint32_t cp); /* Python's str.isspace() */

#endif
