#version 450
// ATTENTION (ir/ops.def): the kernel is shaders/attention.glsl.
#extension GL_GOOGLE_include_directive : require
#include "attention.glsl"
