// RoPE angles. The host gives each pair its angle step in turns, theta_i / 2pi, as a 64-bit
// fixed-point fraction of a turn (runtime/vk_lower.c), so pos * step mod 1 turn is exact 32-bit
// integer arithmetic (umulExtended) at any position; float tricks (fma-based exact products) are
// not portable, as some drivers split fma. The quarter turn is taken off in integers too; what is
// left, |r| <= pi/4, goes through minimax polynomials (Cephes sinf/cosf) instead of the built-ins,
// whose Vulkan precision is only 2^-11 absolute. The angle error is ~3e-8 rad at any position.

// (sin, cos) of pos * step turns; step = (low, high) words.
vec2 sincos_turns(uint pos, uvec2 step) {
    uint h1, l1, h2, l2;
    umulExtended(pos, step.x, h1, l1);
    umulExtended(pos, step.y, h2, l2);
    uint turns = l2 + h1;                      // the fraction of a turn, in units of 2^-32
    uint q = (turns + 0x20000000u) >> 30;      // nearest quarter turn
    int rem = int(turns - (q << 30));          // in [-2^29, 2^29)
    float r = (float(rem) + float(l1) * 2.3283064365386963e-10) * 1.4629180792671596e-09; // * 2pi / 2^32
    float z = r * r;
    float s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
    float c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
    if (q == 0u) return vec2(s, c);
    if (q == 1u) return vec2(c, -s);
    if (q == 2u) return vec2(-s, -c);
    return vec2(-c, s);
}

// Dims of pair i: NORMAL (2i, 2i+1), NEOX (i, i + n_rot/2).
uvec2 rope_pair(uint i, uint n_rot, bool neox) { return neox ? uvec2(i, i + n_rot / 2u) : uvec2(2u * i, 2u * i + 1u); }

// The two dims of slot s of a head of dh dims whose first rot dims turn in pairs: pair s while
// s < rot / 2, else two pass-through dims half the tail apart (the second past dh for an odd tail),
// so that whoever holds a slot holds what RoPE turns together.
uvec2 rope_slot(uint s, uint rot, uint dh, bool neox) {
    if (s < rot / 2u) return rope_pair(s, rot, neox);
    uint d = rot + (s - rot / 2u);
    return uvec2(d, d + (dh - rot + 1u) / 2u);
}
