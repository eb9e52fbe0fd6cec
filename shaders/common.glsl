// Conventions every rlx kernel follows (the C side, runtime/vk_pipeline.c, relies on them):
//  - spec constant 0 is the workgroup size (x); no kernel assumes a subgroup size.
//  - set 0 is shared by every kernel of a program: binding 0 holds the run-time scalars, binding 1
//    the status words a kernel sets when it meets bad data (the host turns them into an error).
//  - set 1 holds the kernel's own storage buffers, binding 0.. in the order of shaders/kernels.def.
//  - push constants are 32-bit scalars only (the manifest's push size is checked against them).
//  - a 1-D grid larger than maxComputeWorkGroupCount[0] is folded into x * y groups: use group_id().
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 0) const uint WG = 64;

layout(set = 0, binding = 0) readonly buffer RlxScalars {
    uint n_past;   // tokens already in the KV cache
    uint n_tokens; // valid rows of this run
} rlx;

// Status words: [0] first error code (0 = none), [1] node index, [2] offending value.
layout(set = 0, binding = 1) buffer RlxStatus {
    uint rlx_status[];
};

#define RLX_ERR_EMBED_ID 1u
#define RLX_ERR_F16_RANGE 2u // shaders/dequant.comp F16_OUT

void rlx_report(uint code, uint node, uint value) {
    if (atomicCompSwap(rlx_status[0], 0u, code) == 0u) {
        rlx_status[1] = node;
        rlx_status[2] = value;
    }
}

uint group_id() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Rows to compute this run. Token-major tensors (tok = rows per token, see runtime/vk_compile.c)
// stop at n_tokens; their padding rows are left as they are (unspecified, ir/backend.h).
uint valid_rows(uint rows, uint tok) { return tok == 0u ? rows : min(rows, rlx.n_tokens * tok); }
