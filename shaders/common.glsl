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

// The run's rows (ir/ops.def, the run contract; runtime/vk_compile.c load_rows fills it): a header
// of 8 words, then pos[static_rows], seq[static_rows] and the page table [seqs][page_cols]. seq
// indexes the table's rows (the host numbers a run's sequences 0.. in order of first use); page k
// of a row holds that sequence's positions [k << page_shift, (k + 1) << page_shift). Rows past
// n_tokens (padding) are position 0 of table row 0. The single-sequence form (rows NULL) is the
// same table: pos = n_past + r, seq 0, page k = k.
layout(set = 0, binding = 0) readonly buffer RlxScalars {
    uint n_past;      // ATTENTION without a cache: query row i sits at n_past + i (0 with rows)
    uint n_tokens;    // valid rows of this run
    uint ring_fill;   // chain_step.comp: ids gathered so far
    uint page_shift;  // log2(page_size)
    uint page_cols;   // columns of the page table
    uint static_rows; // R: rows of pos and seq
    uint n_seqs;      // table rows this run uses
    uint pad1;
    uint table[];     // pos[R], seq[R], pages[][page_cols]
} rlx;

#define RLX_ROWS_HEADER_WORDS 8u

// Position of row r (a row past R, of a tensor that is not token-major, counts on from n_past).
uint rlx_pos(uint r) { return r < rlx.static_rows ? rlx.table[r] : rlx.n_past + r; }

// Where row r's page table starts in rlx.table: look-ups of its keys go through rlx_page_row.
uint rlx_pages_of(uint r) {
    uint s = r < rlx.static_rows ? rlx.table[rlx.static_rows + r] : 0u;
    return 2u * rlx.static_rows + s * rlx.page_cols;
}

// Pool row of position j of the sequence whose pages start at `pages` (rlx_pages_of): one load.
uint rlx_page_row(uint pages, uint j) {
    return (rlx.table[pages + (j >> rlx.page_shift)] << rlx.page_shift) | (j & ((1u << rlx.page_shift) - 1u));
}

// Pool row of position j of row r's sequence.
uint rlx_kv_row(uint r, uint j) { return rlx_page_row(rlx_pages_of(r), j); }

// The state table of a program with recurrent state (ir/ops.def; runtime/vk_compile.c
// load_state_table), after the page table: slot[R], first[R], count[R] of each table row in use
// (n_seqs of them), then order[R], the valid rows grouped by table row, each group in row order.
uint rlx_state_table() { return 2u * rlx.static_rows + rlx.static_rows * rlx.page_cols; }
uint rlx_seq_slot(uint s) { return rlx.table[rlx_state_table() + s]; }
uint rlx_seq_first(uint s) { return rlx.table[rlx_state_table() + rlx.static_rows + s]; }
uint rlx_seq_count(uint s) { return rlx.table[rlx_state_table() + 2u * rlx.static_rows + s]; }
// The row at place o of order[] (o < n_tokens), and its table row.
uint rlx_order(uint o) { return rlx.table[rlx_state_table() + 3u * rlx.static_rows + o]; }
uint rlx_seq_of(uint r) { return rlx.table[rlx.static_rows + r]; }
// Row t (in row order) of table row s.
uint rlx_seq_row(uint s, uint t) {
    uint base = rlx_state_table();
    return rlx.table[base + 3u * rlx.static_rows + rlx.table[base + rlx.static_rows + s] + t];
}
// Whether table row s starts afresh in this run: its first row is position 0 (its state is zero).
bool rlx_seq_fresh(uint s) { return rlx_pos(rlx_seq_row(s, 0u)) == 0u; }

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
