#version 450
// attention_step.comp over F16 pools (shaders/kv_type.glsl): the new key and value are rounded to
// F16 before they are used, so the step attends to what the cache holds.
#extension GL_GOOGLE_include_directive : require
#define ATTN_STEP
#define RLX_KV_F16
#include "attention.glsl"
