// The four cooperative-matrix operations of shaders/matmul_coop.glsl and matmul_batch.glsl on
// 16 x 16 f16 operands and f32 accumulators: VK_NV_cooperative_matrix's, or with RLX_COOP_EMULATE
// plain code on shared memory (any device; subgroups are 32 consecutive invocations there).
// The includer declares smem (uvec4), S (operand row stride in uvec4), CS (result row stride in
// uvec4) and t (the invocation's index) first.

#ifdef RLX_COOP_EMULATE
// A 16 x 16 f16 operand: rows S uvec4 apart from smem[at]; for B (col), w rows are its columns.
struct operand {
    uint at;
};
// A 16 x 16 f32 accumulator: this invocation's elements lane + 32 i, row-major.
struct accum {
    float v[8];
};
#define OPERAND operand
#define ACCUM accum
#define UNROLL [[dont_unroll]] // code size: lavapipe's compiler splits long code around barriers slowly
#define ACCUM_ZERO accum(float[8](0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
#define LOAD(m, at, col) m = operand(at)
#define MULADD(a, b, c) muladd(a, b, c)
#define STORE(c, at) store_accum(c, at)

float op_at(operand a, uint i, uint j) {
    return unpackHalf2x16(smem[a.at + i * S + j / 8u][(j % 8u) / 2u])[j % 2u];
}

accum muladd(operand a, operand b, accum c) {
    uint lane = t % 32u;
    [[dont_unroll]] for (uint k = 0u; k < 16u; k++) {
        [[unroll]] for (uint i = 0u; i < 8u; i++) {
            uint e = lane + 32u * i;
            c.v[i] += op_at(a, e / 16u, k) * op_at(b, e % 16u, k);
        }
    }
    return c;
}

void store_accum(accum c, uint at) {
    uint lane = t % 32u;
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint e = lane + 32u * i, r = e / 16u, n = e % 16u;
        smem[at + r * CS + n / 4u][n % 4u] = floatBitsToUint(c.v[i]);
    }
}

uint subgroup_index() { return t / 32u; }
#else
#define UNROLL [[unroll]]
#define OPERAND fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define ACCUM fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define ACCUM_ZERO ACCUM(0.0)
#define LOAD(m, at, col) coopMatLoadNV(m, smem, at, S, col)
#define MULADD(a, b, c) coopMatMulAddNV(a, b, c)
#define STORE(c, at) coopMatStoreNV(c, smem, at, CS, false)

uint subgroup_index() { return gl_SubgroupID; }
#endif
