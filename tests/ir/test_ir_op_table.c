/* Every op in ops.def has a name (its own macro name), an input count within RLX_MAX_INPUTS, a
 * shape rule and a CPU kernel. The list is generated from ops.def, so a new op is covered the
 * moment it is declared. */
#include <stdio.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"
#include "ir/ir_internal.h"
#include "test_util.h"

typedef struct op_decl {
    rlx_op op;
    const char *name;
    int n_in;
} op_decl;

static const op_decl decls[] = {
#define RLX_OP(name, n_in, shape) {RLX_OP_##name, #name, n_in},
#include "ir/ops.def"
#undef RLX_OP
};

int main(void) {
    size_t n = sizeof decls / sizeof decls[0];
    T_CHECK(n == RLX_OP_COUNT, "ops.def lists %zu ops, the enum has %d", n, RLX_OP_COUNT);
    for (size_t i = 0; i < n; i++) {
        const op_decl *d = &decls[i];
        bool name_ok = strcmp(rlx_op_name(d->op), d->name) == 0;
        bool inputs_ok = rlx_op_max_inputs(d->op) == d->n_in && d->n_in <= RLX_MAX_INPUTS;
        bool rule = rlx_op_has_shape_rule(d->op), kernel = rlx_cpu_has_kernel(d->op);
        printf("  %-10s name %-3s inputs %d %-3s shape rule %-3s cpu kernel %s\n", d->name, name_ok ? "ok" : "BAD",
               d->n_in, inputs_ok ? "ok" : "BAD", rule ? "yes" : "NO", kernel ? "yes" : "NO");
        T_CHECK(name_ok, "%s: rlx_op_name gives %s", d->name, rlx_op_name(d->op));
        T_CHECK(inputs_ok, "%s: max inputs %d vs ops.def %d (RLX_MAX_INPUTS %d)", d->name, rlx_op_max_inputs(d->op),
                d->n_in, RLX_MAX_INPUTS);
        T_CHECK(rule, "%s has no shape rule", d->name);
        T_CHECK(kernel, "%s has no CPU kernel", d->name);
    }
    T_CHECK(strcmp(rlx_op_name(RLX_OP_COUNT), "UNKNOWN_OP") == 0, "out-of-range op name");
    T_CHECK(!rlx_cpu_has_kernel(RLX_OP_COUNT) && !rlx_op_has_shape_rule(RLX_OP_COUNT), "out-of-range op lookups");
    return t_summary("test_ir_op_table");
}
