#version 450
// ROPE: shaders/rope_kernel.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rope_kernel.glsl"
