#version 450
// ATTENTION of one decode token with its q/k norm, RoPE and K/V cache write (shaders/attention.glsl,
// ATTN_STEP).
#extension GL_GOOGLE_include_directive : require
#define ATTN_STEP
#include "attention.glsl"
