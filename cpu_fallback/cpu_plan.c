/* Planning a CPU program: which nodes carry the token axis, where each node's values live, and how
 * big the arena and the per-thread scratch are.
 *
 * Buffers are reused by liveness: a computed node gets an arena slot when it runs and gives it back
 * after its last reader (reading through RESHAPE views counts); graph outputs keep theirs to the
 * end. A node's slot is taken before its inputs' slots are released, so no kernel ever writes
 * over its own inputs. Slots are placed best-fit into gaps between live slots. */
#include <stdlib.h>
#include <string.h>

#include "cpu_fallback/cpu_internal.h"
#include "ir/analysis.h"
#include "loader/core/dequant.h"

#define ARENA_ALIGN 64

/* Inputs a kernel reads as a matrix in the stored type; every other slot reads f32 values. */
static bool is_matrix_slot(rlx_op op, int slot) { return rlx_op_operand(op, slot) == RLX_OPERAND_MATRIX; }

/* ir/analysis.h rlx_token_major over the flags of the nodes before n. */
static bool token_rows_of(const rlx_program *p, const rlx_cpu_node *n) {
    const rlx_node_info *in = &n->info;
    bool tok[2] = {false, false};
    for (int k = 0; k < 2 && k < in->n_in; k++) tok[k] = in->in[k] != RLX_NO_NODE && p->nodes[in->in[k]].token_rows;
    const rlx_node_info *x = in->n_in > 0 && in->in[0] != RLX_NO_NODE ? &p->nodes[in->in[0]].info : NULL;
    return rlx_token_major(in, x, tok, p->static_rows);
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* Per-thread scratch floats and one-op temporary bytes node i needs. */
static void node_scratch(const rlx_program *p, const rlx_cpu_node *n, size_t *scratch, size_t *temp) {
    const rlx_node_info *in = &n->info;
    *scratch = 0;
    *temp = 0;
    switch (in->op) {
    case RLX_OP_MATMUL: *scratch = rlx_cpu_matmul_scratch(p->nodes[in->in[1]].info.shape.dim[1]); break;
    case RLX_OP_ATTENTION:
        *scratch = (size_t)p->nodes[in->in[1]].info.shape.dim[0] + (size_t)in->shape.dim[2];
        break;
    case RLX_OP_ROPE: *scratch = (size_t)in->attrs.rope.n_rot; break;
    case RLX_OP_DELTA_RULE: *scratch = rlx_cpu_delta_scratch(in, in->shape.dim[2]); break;
    case RLX_OP_MOE_FFN: {
        const rlx_shape *gate = &p->nodes[in->in[2]].info.shape;
        int64_t rows = in->shape.dim[0], d = gate->dim[2], f = gate->dim[1];
        *scratch = max_size(rlx_cpu_matmul_scratch(d), rlx_cpu_matmul_scratch(f));
        /* row list (int64), gathered x [rows, d], gate and up [rows, f], down [rows, d] */
        *temp = (size_t)rows * (sizeof(int64_t) + sizeof(float) * (size_t)(2 * d + 2 * f));
        break;
    }
    default: break;
    }
}

/* ---- arena slots ---- */

typedef struct slot {
    size_t offset, size;
    rlx_node owner;
} slot;

typedef struct arena_plan {
    slot *live; /* sorted by offset */
    int32_t n_live;
    size_t high_water;
} arena_plan;

static size_t place(arena_plan *a, size_t size, rlx_node owner) {
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, prev_end = 0;
    int32_t best_pos = a->n_live;
    for (int32_t k = 0; k <= a->n_live; k++) {
        size_t start = k < a->n_live ? a->live[k].offset : SIZE_MAX;
        size_t gap = start - prev_end;
        if (k < a->n_live && gap >= size && gap < best_gap) {
            best = prev_end;
            best_gap = gap;
            best_pos = k;
        }
        if (k < a->n_live) prev_end = a->live[k].offset + a->live[k].size;
    }
    if (best == SIZE_MAX) {
        best = prev_end;
        best_pos = a->n_live;
    }
    memmove(&a->live[best_pos + 1], &a->live[best_pos], (size_t)(a->n_live - best_pos) * sizeof *a->live);
    a->live[best_pos] = (slot){best, size, owner};
    a->n_live++;
    if (best + size > a->high_water) a->high_water = best + size;
    return best;
}

static void release(arena_plan *a, rlx_node owner) {
    for (int32_t k = 0; k < a->n_live; k++)
        if (a->live[k].owner == owner) {
            memmove(&a->live[k], &a->live[k + 1], (size_t)(a->n_live - k - 1) * sizeof *a->live);
            a->n_live--;
            return;
        }
}

/* The node whose storage node i uses (itself unless it is an alias). */
static rlx_node root_of(const rlx_program *p, rlx_node i) {
    while (p->nodes[i].store == CPU_STORE_ALIAS) i = p->nodes[i].info.in[0];
    return i;
}

static rlx_status plan_arena(rlx_program *p) {
    int32_t n = p->n_nodes;
    rlx_node *last_use = malloc((size_t)n * sizeof *last_use);
    arena_plan a = {.live = malloc(((size_t)n + 1) * sizeof *a.live)};
    if (!last_use || !a.live) {
        free(last_use);
        free(a.live);
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: cannot allocate the buffer plan for %d nodes", n);
    }
    for (rlx_node i = 0; i < n; i++) last_use[i] = i;
    /* reading a view reads its root */
    for (rlx_node i = 0; i < n; i++)
        for (int k = 0; k < p->nodes[i].info.n_in; k++)
            if (p->nodes[i].info.in[k] != RLX_NO_NODE) last_use[root_of(p, p->nodes[i].info.in[k])] = i;
    for (int32_t o = 0; o < p->n_outputs; o++) last_use[root_of(p, p->outputs[o])] = n;
    for (rlx_node i = 0; i < n; i++) {
        rlx_cpu_node *nd = &p->nodes[i];
        if (nd->store == CPU_STORE_ARENA) {
            size_t bytes = ((size_t)nd->numel * 4 + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
            nd->arena_offset = place(&a, bytes, i);
        }
        for (int32_t k = a.n_live - 1; k >= 0; k--)
            if (last_use[a.live[k].owner] <= i) release(&a, a.live[k].owner);
    }
    p->arena_size = a.high_water;
    free(last_use);
    free(a.live);
    return NULL;
}

/* ---- weights read as activations ---- */

static rlx_status materialize_f32_weights(rlx_program *p) {
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        const rlx_node_info *in = &p->nodes[i].info;
        for (int k = 0; k < in->n_in; k++) {
            if (in->in[k] == RLX_NO_NODE || is_matrix_slot(in->op, k)) continue;
            rlx_cpu_node *w = &p->nodes[in->in[k]];
            if (w->info.op != RLX_OP_WEIGHT || w->weight->type == RLX_DTYPE_F32 || w->weight_f32) continue;
            w->weight_f32 = malloc((size_t)w->numel * sizeof(float));
            if (!w->weight_f32)
                return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: weight '%s': cannot allocate an f32 copy",
                                  w->info.name);
            rlx_dequantize(w->weight->type, w->weight->data, w->weight_f32, (uint64_t)w->numel);
        }
    }
    return NULL;
}

rlx_status rlx_cpu_plan(rlx_program *p, int n_threads) {
    p->static_rows = 1;
    for (rlx_node i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].info.op == RLX_OP_INPUT) {
            p->static_rows = p->nodes[i].info.shape.dim[0];
            break;
        }
    size_t scratch = 0, temp = 0;
    for (rlx_node i = 0; i < p->n_nodes; i++) {
        rlx_cpu_node *n = &p->nodes[i];
        n->token_rows = token_rows_of(p, n);
        size_t s, t;
        node_scratch(p, n, &s, &t);
        scratch = max_size(scratch, s);
        temp = max_size(temp, t);
    }
    RLX_TRY(materialize_f32_weights(p));
    RLX_TRY(plan_arena(p));
    p->scratch_floats = (scratch + 15) / 16 * 16; /* keep each thread's part 64-byte aligned */
    p->op_temp_size = temp;
    p->arena = p->arena_size ? aligned_alloc(ARENA_ALIGN, p->arena_size) : NULL;
    p->scratch = p->scratch_floats ? aligned_alloc(ARENA_ALIGN, p->scratch_floats * sizeof(float) * (size_t)n_threads)
                                   : NULL;
    p->op_temp = temp ? aligned_alloc(ARENA_ALIGN, (temp + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN) : NULL;
    p->data = calloc((size_t)p->n_nodes, sizeof *p->data);
    if ((p->arena_size && !p->arena) || (p->scratch_floats && !p->scratch) || (temp && !p->op_temp) || !p->data)
        return rlx_errorf(RLX_ERR_OUT_OF_MEMORY, "compile: cannot allocate %zu bytes of buffers (%d nodes)",
                          p->arena_size + p->scratch_floats * sizeof(float) * (size_t)n_threads + temp, p->n_nodes);
    /* zeroed so padding rows hold finite values before their first write */
    if (p->arena) memset(p->arena, 0, p->arena_size);
    return NULL;
}
