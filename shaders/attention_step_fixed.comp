#version 450
// attention_step.comp with the plan of one query head per workgroup, blocks of 8 keys and 4 head
// dims per lane in one load, fixed in the source (shaders/attention.glsl, ATTN_FIXED).
#extension GL_GOOGLE_include_directive : require
#define ATTN_STEP
#define ATTN_FIXED
#include "attention.glsl"
