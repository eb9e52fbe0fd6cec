#version 450
// matmul_batch.glsl with its cooperative-matrix operations done by plain code (shaders/coop_ops.glsl,
// RLX_VK_COOPMAT=emulate-mixed): slow, and only for testing the kernel on devices without
// cooperative matrices (lavapipe in CI).
#extension GL_GOOGLE_include_directive : require
#define RLX_COOP_EMULATE
#include "matmul_batch.glsl"
