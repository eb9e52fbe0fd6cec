#version 450
// shaders/matvec.glsl with the weights read past the L1 cache (MATVEC_STREAM).
#extension GL_GOOGLE_include_directive : require
#define MATVEC_STREAM
#include "matvec.glsl"
