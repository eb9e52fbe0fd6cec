#version 450
// KV_WRITE: shaders/kv_write.glsl.
#extension GL_GOOGLE_include_directive : require
#include "kv_write.glsl"
