#version 450
// rms_norm.comp with its fused cache writes (KV != 0) into F16 pools (shaders/kv_type.glsl).
#extension GL_GOOGLE_include_directive : require
#define RLX_KV_F16
#include "rms_norm.glsl"
