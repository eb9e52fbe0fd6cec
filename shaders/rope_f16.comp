#version 450
// rope.comp with its fused cache writes (KV != 0) into F16 pools (shaders/kv_type.glsl).
#extension GL_GOOGLE_include_directive : require
#define RLX_KV_F16
#include "rope_kernel.glsl"
