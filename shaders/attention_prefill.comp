#version 450
// ATTENTION for many query rows: shaders/attention_prefill.glsl.
#extension GL_GOOGLE_include_directive : require
#include "attention_prefill.glsl"
