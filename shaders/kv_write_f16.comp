#version 450
// kv_write.comp into F16 pools (shaders/kv_type.glsl).
#extension GL_GOOGLE_include_directive : require
#define RLX_KV_F16
#include "kv_write.glsl"
