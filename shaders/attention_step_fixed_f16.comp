#version 450
// attention_step_fixed.comp over F16 pools (shaders/kv_type.glsl, attention_step_f16.comp).
#extension GL_GOOGLE_include_directive : require
#define ATTN_STEP
#define ATTN_FIXED
#define RLX_KV_F16
#include "attention.glsl"
