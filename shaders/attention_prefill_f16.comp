#version 450
// attention_prefill.comp over F16 pools (PAGED; shaders/kv_type.glsl).
#extension GL_GOOGLE_include_directive : require
#define RLX_KV_F16
#include "attention_prefill.glsl"
