#version 450
// MATMUL for few rows of x (decode, small batches): shaders/matvec.glsl.
#extension GL_GOOGLE_include_directive : require
#include "matvec.glsl"
