/* Shape and dtype rules, one per rule name in ops.def. The rule table is generated from ops.def,
 * so an op whose rule is missing fails to compile. Semantics of every op: the comments in ops.def.
 *
 * Dtypes: activations are F32, token ids I32. A WEIGHT keeps its stored dtype; EMBED, MATMUL and
 * MOE_FFN read weights of any type loader/core/dequant can turn into f32, and a WEIGHT of such a type
 * may also stand where an F32 activation is expected (norm weights, RoPE frequency factors). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ir/ir_internal.h"

void rlx_shape_error(rlx_shape_errors *e, const char *fmt, ...) {
    e->count++;
    if (e->len + 2 >= sizeof e->text) return;
    if (e->len > 0) e->text[e->len++] = '\n';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(e->text + e->len, sizeof e->text - e->len, fmt, ap);
    va_end(ap);
    if (n > 0) e->len += (size_t)n < sizeof e->text - e->len ? (size_t)n : sizeof e->text - e->len - 1;
}

const char *rlx_shape_str(const rlx_shape *s, char *buf, size_t size) {
    size_t used = 0;
    used += (size_t)snprintf(buf, size, "[");
    for (int32_t i = 0; i < s->rank && i < RLX_MAX_DIMS && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? ", %" PRId64 : "%" PRId64, s->dim[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

bool rlx_dtype_is_dequantizable(uint32_t dtype) {
    const rlx_dtype_info *info = rlx_dtype_get(dtype);
    return info && info->can_dequantize;
}

/* ---- helpers ---- */

#define SHAPE_STR(s) rlx_shape_str(&(s), (char[64]){0}, 64)

static const rlx_node_info *input(const rlx_graph *g, const rlx_node_info *n, int i) {
    return n->in[i] == RLX_NO_NODE ? NULL : rlx_graph_node(g, n->in[i]);
}

static int64_t last_dim(const rlx_shape *s) { return s->dim[s->rank - 1]; }

/* An operand read as f32 values: an F32 node, or a WEIGHT the backend can dequantize. */
static bool check_f32_operand(const rlx_node_info *x, const char *what, rlx_shape_errors *e) {
    if (x->dtype == RLX_DTYPE_F32) return true;
    if (x->op == RLX_OP_WEIGHT && rlx_dtype_is_dequantizable(x->dtype)) return true;
    rlx_shape_error(e, "%s is %s, expected F32%s", what, rlx_dtype_name(x->dtype),
                    x->op == RLX_OP_WEIGHT ? " or a dequantizable weight type" : "");
    return false;
}

/* A matrix operand of MATMUL / EMBED / MOE_FFN: any dequantizable type, rows whole blocks. */
static bool check_weight_operand(const rlx_node_info *w, const char *what, rlx_shape_errors *e) {
    if (!rlx_dtype_is_dequantizable(w->dtype)) {
        rlx_shape_error(e, "%s has type %s, which cannot be dequantized", what, rlx_dtype_name(w->dtype));
        return false;
    }
    if (w->op != RLX_OP_WEIGHT && w->dtype != RLX_DTYPE_F32) {
        rlx_shape_error(e, "%s is an activation of type %s, expected F32", what, rlx_dtype_name(w->dtype));
        return false;
    }
    return true;
}

static bool check_rank(const rlx_node_info *x, const char *what, int32_t lo, int32_t hi, rlx_shape_errors *e) {
    if (x->shape.rank >= lo && x->shape.rank <= hi) return true;
    if (lo == hi)
        rlx_shape_error(e, "%s %s has rank %d, expected %d", what, SHAPE_STR(x->shape), x->shape.rank, lo);
    else
        rlx_shape_error(e, "%s %s has rank %d, expected %d..%d", what, SHAPE_STR(x->shape), x->shape.rank, lo, hi);
    return false;
}

static bool same_shape(const rlx_shape *a, const rlx_shape *b) {
    if (a->rank != b->rank) return false;
    for (int32_t i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i]) return false;
    return true;
}

/* Rank 1..4, every dim >= 1, and the byte size of an f32 tensor of that shape fits in 63 bits. */
static bool check_shape_valid(const rlx_shape *s, const char *what, rlx_shape_errors *e) {
    if (s->rank < 1 || s->rank > RLX_MAX_DIMS) {
        rlx_shape_error(e, "%s has rank %d, expected 1..%d", what, s->rank, RLX_MAX_DIMS);
        return false;
    }
    int64_t numel = 4;
    for (int32_t i = 0; i < s->rank; i++) {
        if (s->dim[i] < 1) {
            rlx_shape_error(e, "%s %s: dim %d is %" PRId64 ", expected >= 1", what, SHAPE_STR(*s), i, s->dim[i]);
            return false;
        }
        if (__builtin_mul_overflow(numel, s->dim[i], &numel)) {
            rlx_shape_error(e, "%s %s: element count overflows", what, SHAPE_STR(*s));
            return false;
        }
    }
    return true;
}

/* ---- rules ---- */

static bool shape_leaf(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    (void)g;
    bool ok = check_shape_valid(&n->shape, "shape", e);
    const rlx_dtype_info *info = rlx_dtype_get(n->dtype);
    switch (n->op) {
    case RLX_OP_INPUT:
        if (n->dtype != RLX_DTYPE_F32 && n->dtype != RLX_DTYPE_I32) {
            rlx_shape_error(e, "input '%s' has type %s, expected F32 or I32", n->name ? n->name : "",
                            rlx_dtype_name(n->dtype));
            ok = false;
        }
        break;
    case RLX_OP_WEIGHT:
        if (!info) {
            rlx_shape_error(e, "weight '%s' has unknown type %" PRIu32, n->name ? n->name : "", n->dtype);
            ok = false;
        } else if (ok && last_dim(&n->shape) % info->block_size != 0) {
            rlx_shape_error(e, "weight '%s' %s: rows of %" PRId64 " are not whole %s blocks of %" PRIu32,
                            n->name ? n->name : "", SHAPE_STR(n->shape), last_dim(&n->shape), info->name,
                            info->block_size);
            ok = false;
        }
        break;
    case RLX_OP_STATE:
        if (n->dtype != RLX_DTYPE_F32) {
            rlx_shape_error(e, "state is %s, expected F32", rlx_dtype_name(n->dtype));
            ok = false;
        }
        if (n->attrs.layer < 0 || n->attrs.state_offset < 0) {
            rlx_shape_error(e, "layer %d, state_offset %" PRId64 ": expected both >= 0", n->attrs.layer,
                            n->attrs.state_offset);
            ok = false;
        }
        break;
    case RLX_OP_KV_CACHE:
        if (n->attrs.layer < 0) {
            rlx_shape_error(e, "layer %d is negative", n->attrs.layer);
            ok = false;
        }
        if (n->shape.rank != 3) {
            rlx_shape_error(e, "cache %s has rank %d, expected [cap, H_kv, Dh]", SHAPE_STR(n->shape), n->shape.rank);
            ok = false;
        }
        break;
    default:
        break;
    }
    return ok;
}

static bool shape_embed(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *table = input(g, n, 0), *ids = input(g, n, 1);
    /* every check runs, so all the problems are reported */
    bool ok = check_rank(table, "table", 2, 2, e);
    ok &= check_weight_operand(table, "table", e);
    ok &= check_rank(ids, "ids", 1, 1, e);
    if (ids->dtype != RLX_DTYPE_I32) {
        rlx_shape_error(e, "ids are %s, expected I32", rlx_dtype_name(ids->dtype));
        ok = false;
    }
    if (!ok) return false;
    n->dtype = RLX_DTYPE_F32;
    n->shape = rlx_shape_make(2, (int64_t[]){ids->shape.dim[0], table->shape.dim[1]});
    return true;
}

static bool shape_matmul(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *w = input(g, n, 1);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_rank(w, "w", 2, 2, e);
    ok &= check_weight_operand(w, "w", e);
    if (!ok) return false;
    if (last_dim(&x->shape) != w->shape.dim[1]) {
        rlx_shape_error(e, "x has %" PRId64 " columns but w %s has %" PRId64, last_dim(&x->shape),
                        SHAPE_STR(w->shape), w->shape.dim[1]);
        return false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    n->shape.dim[n->shape.rank - 1] = w->shape.dim[0];
    return true;
}

static bool shape_rms_norm(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *w = input(g, n, 1);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_f32_operand(w, "w", e);
    ok &= check_rank(w, "w", 1, 1, e);
    if (!ok) return false;
    if (w->shape.dim[0] != last_dim(&x->shape)) {
        rlx_shape_error(e, "x %s has rows of %" PRId64 " but w %s has %" PRId64, SHAPE_STR(x->shape),
                        last_dim(&x->shape), SHAPE_STR(w->shape), w->shape.dim[0]);
        ok = false;
    }
    if (!(n->attrs.eps >= 0.0f)) {
        rlx_shape_error(e, "eps %g is not >= 0", (double)n->attrs.eps);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    return ok;
}

static bool shape_rope(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *ff = input(g, n, 1);
    const rlx_rope_attrs *r = &n->attrs.rope;
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_rank(x, "x", 3, 3, e);
    if (!ok) return false;
    int64_t dh = x->shape.dim[2];
    if (r->layout != RLX_ROPE_LAYOUT_NORMAL && r->layout != RLX_ROPE_LAYOUT_NEOX) {
        rlx_shape_error(e, "unknown layout %d", (int)r->layout);
        ok = false;
    }
    if (r->n_rot < 2 || r->n_rot % 2 != 0 || r->n_rot > dh) {
        rlx_shape_error(e, "n_rot %d must be even and in [2, head size %" PRId64 "]", r->n_rot, dh);
        ok = false;
    }
    if (!(r->freq_base > 0.0f)) {
        rlx_shape_error(e, "freq_base %g is not > 0", (double)r->freq_base);
        ok = false;
    }
    if (ff) {
        bool ff_ok = check_f32_operand(ff, "freq_factors", e);
        ff_ok &= check_rank(ff, "freq_factors", 1, 1, e);
        if (ff_ok && ff->shape.dim[0] != r->n_rot / 2) {
            rlx_shape_error(e, "freq_factors %s, expected [n_rot/2 = %d]", SHAPE_STR(ff->shape), r->n_rot / 2);
            ff_ok = false;
        }
        ok &= ff_ok;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    return ok;
}

static bool shape_kv_write(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *cache = input(g, n, 0), *x = input(g, n, 1);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_rank(x, "x", 3, 3, e);
    if (cache->op != RLX_OP_KV_CACHE && cache->op != RLX_OP_KV_WRITE) {
        rlx_shape_error(e, "cache is %s, expected a KV_CACHE or KV_WRITE node", rlx_op_name(cache->op));
        ok = false;
    }
    if (!ok) return false;
    if (x->shape.dim[1] != cache->shape.dim[1] || x->shape.dim[2] != cache->shape.dim[2]) {
        rlx_shape_error(e, "x %s does not match cache %s in [H_kv, Dh]", SHAPE_STR(x->shape),
                        SHAPE_STR(cache->shape));
        return false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = cache->shape;
    return true;
}

static bool shape_attention(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *q = input(g, n, 0), *k = input(g, n, 1), *v = input(g, n, 2);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(q, "q", e);
    ok &= check_f32_operand(k, "k", e);
    ok &= check_f32_operand(v, "v", e);
    ok &= check_rank(q, "q", 3, 3, e);
    ok &= check_rank(k, "k", 3, 3, e);
    ok &= check_rank(v, "v", 3, 3, e);
    if (!ok) return false;
    if (q->shape.dim[2] != k->shape.dim[2]) {
        rlx_shape_error(e, "q %s and k %s differ in head size", SHAPE_STR(q->shape), SHAPE_STR(k->shape));
        ok = false;
    }
    if (k->shape.dim[0] != v->shape.dim[0] || k->shape.dim[1] != v->shape.dim[1]) {
        rlx_shape_error(e, "k %s and v %s differ in [T, H_kv]", SHAPE_STR(k->shape), SHAPE_STR(v->shape));
        ok = false;
    }
    if (q->shape.dim[1] % k->shape.dim[1] != 0) {
        rlx_shape_error(e, "q has %" PRId64 " heads, not a multiple of k's %" PRId64, q->shape.dim[1],
                        k->shape.dim[1]);
        ok = false;
    }
    if (n->attrs.window < 0) {
        rlx_shape_error(e, "window %d is negative", n->attrs.window);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = rlx_shape_make(3, (int64_t[]){q->shape.dim[0], q->shape.dim[1], v->shape.dim[2]});
    return ok;
}

static bool shape_binary(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *a = input(g, n, 0), *b = input(g, n, 1);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(a, "a", e);
    ok &= check_f32_operand(b, "b", e);
    if (ok && !same_shape(&a->shape, &b->shape)) {
        rlx_shape_error(e, "a %s and b %s differ in shape", SHAPE_STR(a->shape), SHAPE_STR(b->shape));
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = a->shape;
    return ok;
}

static bool shape_unary(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0);
    bool ok = check_f32_operand(x, "x", e);
    if (n->op == RLX_OP_MOE_ROUTE && ok && check_rank(x, "router logits", 2, 2, e)) {
        if (n->attrs.top_k < 1 || n->attrs.top_k > x->shape.dim[1]) {
            rlx_shape_error(e, "top_k %d is outside [1, %" PRId64 " experts]", n->attrs.top_k, x->shape.dim[1]);
            ok = false;
        }
    } else if (n->op == RLX_OP_MOE_ROUTE) {
        ok = false;
    }
    if (n->op == RLX_OP_L2_NORM && !(n->attrs.eps >= 0.0f)) {
        rlx_shape_error(e, "eps %g is not >= 0", (double)n->attrs.eps);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    return ok;
}

static bool shape_argmax(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0);
    if (!check_f32_operand(x, "x", e)) return false;
    n->dtype = RLX_DTYPE_I32;
    n->shape = x->shape;
    if (x->shape.rank == 1)
        n->shape.dim[0] = 1;
    else
        n->shape.rank--;
    return true;
}

static bool shape_reshape(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0);
    if (x->op == RLX_OP_WEIGHT) {
        rlx_shape_error(e, "x is a WEIGHT ('%s'); declare the weight with the shape wanted instead",
                        x->name ? x->name : "");
        return false;
    }
    if (!check_shape_valid(&n->attrs.shape, "new shape", e)) return false;
    if (rlx_shape_numel(&n->attrs.shape) != rlx_shape_numel(&x->shape)) {
        rlx_shape_error(e, "new shape %s has %" PRId64 " elements but x %s has %" PRId64,
                        SHAPE_STR(n->attrs.shape), rlx_shape_numel(&n->attrs.shape), SHAPE_STR(x->shape),
                        rlx_shape_numel(&x->shape));
        return false;
    }
    n->dtype = x->dtype;
    n->shape = n->attrs.shape;
    return true;
}

static bool shape_last_row(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0);
    if (x->dtype != RLX_DTYPE_F32 && x->dtype != RLX_DTYPE_I32) {
        rlx_shape_error(e, "x is %s, expected F32 or I32", rlx_dtype_name(x->dtype));
        return false;
    }
    n->dtype = x->dtype;
    n->shape = x->shape;
    n->shape.dim[0] = 1;
    return true;
}

static bool shape_gather(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *idx = input(g, n, 1);
    bool ok = true;
    if (x->dtype != RLX_DTYPE_F32) {
        rlx_shape_error(e, "x is %s, expected F32", rlx_dtype_name(x->dtype));
        ok = false;
    }
    if (idx->dtype != RLX_DTYPE_I32 || idx->shape.rank != 1) {
        rlx_shape_error(e, "idx is %s%s, expected I32 of rank 1", rlx_dtype_name(idx->dtype), SHAPE_STR(idx->shape));
        ok = false;
    }
    if (!ok) return false;
    n->dtype = x->dtype;
    n->shape = x->shape;
    n->shape.dim[0] = idx->shape.dim[0];
    return true;
}

static bool shape_moe_ffn(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *route = input(g, n, 1);
    const rlx_node_info *gate = input(g, n, 2), *up = input(g, n, 3), *down = input(g, n, 4);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_rank(x, "x", 2, 2, e);
    ok &= check_f32_operand(route, "route", e);
    ok &= check_rank(route, "route", 2, 2, e);
    ok &= check_weight_operand(gate, "gate", e);
    ok &= check_weight_operand(up, "up", e);
    ok &= check_weight_operand(down, "down", e);
    ok &= check_rank(gate, "gate", 3, 3, e);
    ok &= check_rank(up, "up", 3, 3, e);
    ok &= check_rank(down, "down", 3, 3, e);
    if (!ok) return false;
    int64_t n_rows = x->shape.dim[0], d = x->shape.dim[1], n_exp = gate->shape.dim[0], f = gate->shape.dim[1];
    if (route->shape.dim[0] != n_rows || route->shape.dim[1] != n_exp) {
        rlx_shape_error(e, "route %s, expected [%" PRId64 ", %" PRId64 " experts]", SHAPE_STR(route->shape), n_rows,
                        n_exp);
        ok = false;
    }
    if (gate->shape.dim[2] != d || !same_shape(&gate->shape, &up->shape)) {
        rlx_shape_error(e, "gate %s and up %s, expected both [E, F, %" PRId64 "]", SHAPE_STR(gate->shape),
                        SHAPE_STR(up->shape), d);
        ok = false;
    }
    if (down->shape.dim[0] != n_exp || down->shape.dim[1] != d || down->shape.dim[2] != f) {
        rlx_shape_error(e, "down %s, expected [%" PRId64 ", %" PRId64 ", %" PRId64 "]", SHAPE_STR(down->shape), n_exp,
                        d, f);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    return ok;
}

/* A recurrent state operand: a STATE node (the op writes it in place, so nothing else will do). */
static bool check_state_operand(const rlx_node_info *st, const char *what, rlx_shape_errors *e) {
    if (st->op == RLX_OP_STATE) return true;
    rlx_shape_error(e, "%s is %s, expected a STATE node", what, rlx_op_name(st->op));
    return false;
}

static bool shape_causal_conv(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *w = input(g, n, 1), *st = input(g, n, 2);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_rank(x, "x", 2, 2, e);
    ok &= check_f32_operand(w, "w", e);
    ok &= check_rank(w, "w", 2, 2, e);
    ok &= check_state_operand(st, "state", e);
    ok &= check_rank(st, "state", 2, 2, e);
    if (!ok) return false;
    int64_t c = x->shape.dim[1], k = w->shape.dim[1];
    if (w->shape.dim[0] != c || k < 2) {
        rlx_shape_error(e, "w %s, expected [%" PRId64 " channels, K >= 2]", SHAPE_STR(w->shape), c);
        ok = false;
    } else if (st->shape.dim[0] != k - 1 || st->shape.dim[1] != c) {
        rlx_shape_error(e, "state %s, expected [K-1 = %" PRId64 ", %" PRId64 "]", SHAPE_STR(st->shape), k - 1, c);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    return ok;
}

/* DELTA_RULE's per-head operands g and beta: [n, Hv]. */
static bool check_head_scalars(const rlx_node_info *t, const char *what, int64_t rows, int64_t hv,
                               rlx_shape_errors *e) {
    if (!check_f32_operand(t, what, e) || !check_rank(t, what, 2, 2, e)) return false;
    if (t->shape.dim[0] == rows && t->shape.dim[1] == hv) return true;
    rlx_shape_error(e, "%s %s, expected [%" PRId64 ", %" PRId64 "]", what, SHAPE_STR(t->shape), rows, hv);
    return false;
}

static bool shape_delta_rule(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *q = input(g, n, 0), *k = input(g, n, 1), *v = input(g, n, 2);
    const rlx_node_info *gate = input(g, n, 3), *beta = input(g, n, 4), *st = input(g, n, 5);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(q, "q", e);
    ok &= check_rank(q, "q", 3, 3, e);
    ok &= check_f32_operand(k, "k", e);
    ok &= check_rank(k, "k", 3, 3, e);
    ok &= check_f32_operand(v, "v", e);
    ok &= check_rank(v, "v", 3, 3, e);
    ok &= check_state_operand(st, "state", e);
    ok &= check_rank(st, "state", 3, 3, e);
    if (n->attrs.chunk < 0) {
        rlx_shape_error(e, "chunk %d is negative", n->attrs.chunk);
        ok = false;
    }
    if (!ok) return false;
    int64_t rows = q->shape.dim[0], hk = q->shape.dim[1], dk = q->shape.dim[2];
    int64_t hv = v->shape.dim[1], dv = v->shape.dim[2];
    if (!same_shape(&q->shape, &k->shape)) {
        rlx_shape_error(e, "q %s and k %s differ in shape", SHAPE_STR(q->shape), SHAPE_STR(k->shape));
        ok = false;
    }
    if (v->shape.dim[0] != rows || hv % hk != 0) {
        rlx_shape_error(e, "v %s, expected [%" PRId64 ", a multiple of %" PRId64 " key heads, dv]",
                        SHAPE_STR(v->shape), rows, hk);
        ok = false;
    }
    ok &= check_head_scalars(gate, "g", rows, hv, e);
    ok &= check_head_scalars(beta, "beta", rows, hv, e);
    if (st->shape.dim[0] != hv || st->shape.dim[1] != dk || st->shape.dim[2] != dv) {
        rlx_shape_error(e, "state %s, expected [%" PRId64 ", %" PRId64 ", %" PRId64 "]", SHAPE_STR(st->shape), hv,
                        dk, dv);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = v->shape;
    return ok;
}

static bool shape_delta_gate(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *a = input(g, n, 0), *A = input(g, n, 1), *bias = input(g, n, 2);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(a, "a", e);
    ok &= check_rank(a, "a", 2, 2, e);
    ok &= check_f32_operand(A, "A", e);
    ok &= check_rank(A, "A", 1, 1, e);
    ok &= check_f32_operand(bias, "dt_bias", e);
    ok &= check_rank(bias, "dt_bias", 1, 1, e);
    if (!ok) return false;
    if (A->shape.dim[0] != a->shape.dim[1] || bias->shape.dim[0] != a->shape.dim[1]) {
        rlx_shape_error(e, "A %s and dt_bias %s, expected both [%" PRId64 " heads]", SHAPE_STR(A->shape),
                        SHAPE_STR(bias->shape), a->shape.dim[1]);
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = a->shape;
    return ok;
}

static bool shape_scale_rows(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0), *s = input(g, n, 1);
    /* every check runs, so all the problems are reported */
    bool ok = check_f32_operand(x, "x", e);
    ok &= check_f32_operand(s, "s", e);
    if (!ok) return false;
    rlx_shape want = x->shape;
    want.dim[want.rank - 1] = 1;
    if (!same_shape(&s->shape, &want)) {
        rlx_shape_error(e, "s %s, expected %s (one scalar per row of x %s)", SHAPE_STR(s->shape), SHAPE_STR(want),
                        SHAPE_STR(x->shape));
        ok = false;
    }
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    return ok;
}

static bool shape_slice(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e) {
    const rlx_node_info *x = input(g, n, 0);
    if (!check_f32_operand(x, "x", e)) return false;
    int64_t d = last_dim(&x->shape), b = n->attrs.slice_begin, len = n->attrs.slice_len;
    n->dtype = RLX_DTYPE_F32;
    n->shape = x->shape;
    if (b < 0 || len < 1 || b > d - len) {
        rlx_shape_error(e, "slice [%" PRId64 ", +%" PRId64 ") of x %s is not within its last dim of %" PRId64, b, len,
                        SHAPE_STR(x->shape), d);
        return false;
    }
    n->shape.dim[n->shape.rank - 1] = len;
    return true;
}

/* ---- the table ---- */

typedef bool (*shape_rule)(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *e);

static const shape_rule shape_rules[RLX_OP_COUNT] = {
#define RLX_OP(name, n_in, shape) [RLX_OP_##name] = shape,
#include "ops.def"
#undef RLX_OP
};

bool rlx_op_has_shape_rule(rlx_op op) { return (unsigned)op < RLX_OP_COUNT && shape_rules[op] != NULL; }

bool rlx_shape_infer(const rlx_graph *g, rlx_node_info *n, rlx_shape_errors *err) {
    if (!rlx_op_has_shape_rule(n->op)) {
        rlx_shape_error(err, "no shape rule");
        return false;
    }
    return shape_rules[n->op](g, n, err);
}
