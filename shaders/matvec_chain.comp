#version 450
// shaders/matvec.glsl for the logits matvec of a chain's runs (MATVEC_CHAIN): with the argmax, the
// step between runs and the next run's EMBED.
#extension GL_GOOGLE_include_directive : require
#define MATVEC_CHAIN
#include "matvec.glsl"
