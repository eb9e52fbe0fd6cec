// Workgroup reductions: subgroup arithmetic within each subgroup (whatever its size: 8 on
// lavapipe, 32 on NVIDIA, 64 on AMD), then one pass over the per-subgroup partials in shared
// memory. Two barriers per reduction instead of log2(WG) tree steps, which matters most on
// lavapipe, where a barrier is a coroutine switch of the whole workgroup. Every invocation of the
// workgroup must call them (uniform control flow).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

shared float red_f[WG]; // >= gl_NumSubgroups

float wg_sum(float v) {
    v = subgroupAdd(v);
    if (gl_NumSubgroups == 1u) return v;
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float r = 0.0;
    for (uint i = 0u; i < gl_NumSubgroups; i++) r += red_f[i];
    barrier();
    return r;
}

float wg_max(float v) {
    v = subgroupMax(v);
    if (gl_NumSubgroups == 1u) return v;
    if (subgroupElect()) red_f[gl_SubgroupID] = v;
    barrier();
    float r = red_f[0];
    for (uint i = 1u; i < gl_NumSubgroups; i++) r = max(r, red_f[i]);
    barrier();
    return r;
}
