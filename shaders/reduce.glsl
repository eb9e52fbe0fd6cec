// Workgroup reductions through shared memory (no subgroup size is assumed). WG must be a power of
// two (runtime/vk_compile.c picks it so). Every invocation of the workgroup must call them.
shared float red_f[WG];

float wg_sum(float v) {
    uint t = gl_LocalInvocationID.x;
    red_f[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) red_f[t] += red_f[t + s];
        barrier();
    }
    float r = red_f[0];
    barrier();
    return r;
}

float wg_max(float v) {
    uint t = gl_LocalInvocationID.x;
    red_f[t] = v;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) red_f[t] = max(red_f[t], red_f[t + s]);
        barrier();
    }
    float r = red_f[0];
    barrier();
    return r;
}
