#version 450
// attention_step.comp with the plan of one query head per workgroup, 8 keys per lane group and
// block, and 8 head dims per lane in units of 4, fixed in the source (shaders/attention.glsl, ATTN_FIXED).
#extension GL_GOOGLE_include_directive : require
#define ATTN_STEP
#define ATTN_FIXED
#include "attention.glsl"
