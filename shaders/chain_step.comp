#version 450
// CHAIN_STEP: greedy decoding ahead (runtime/vk_compile.c, vk_program_run_chain). Recorded after a
// one-token decode step whose output is its argmax: that id becomes the next step's input token,
// is appended to the ring the host reads back, and row 0's position (and n_past, for attention
// without a cache) moves on by the one row just written. The host has checked that row 0's page
// table covers every position the chain reaches.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(set = 1, binding = 0) readonly buffer Out { uint argmax_id; };
// The program's input region: word 0 n_past, word 2 the ring's fill, word RLX_ROWS_HEADER_WORDS
// row 0's position (the scalars of common.glsl).
layout(set = 1, binding = 1) buffer In { uint words[]; };

layout(push_constant) uniform Push {
    uint token_word; // the input token, in words from the region's start
    uint ring_word;  // the ring's first entry
    uint ring_len;
} p;

void main() {
    if (gl_LocalInvocationIndex != 0u) return;
    uint id = argmax_id;
    uint fill = words[2];
    if (fill < p.ring_len) words[p.ring_word + fill] = id;
    words[2] = fill + 1u;
    words[0] += 1u;
    words[RLX_ROWS_HEADER_WORDS] += 1u;
    // -1, the argmax of logits that overflowed, goes to the host in the ring; the steps left in
    // the chain take token 0, whose results the host drops with the error
    words[p.token_word] = id == 0xffffffffu ? 0u : id;
}
