#version 450
// RMS_NORM: shaders/rms_norm.glsl.
#extension GL_GOOGLE_include_directive : require
#include "rms_norm.glsl"
