#version 450
// matmul_coop.glsl with its cooperative-matrix operations done by plain code on shared memory
// (RLX_VK_COOPMAT=emulate): slow, and only for testing the kernel on devices without cooperative
// matrices (lavapipe in CI). Subgroups are 32 consecutive invocations here, whatever the device's.
#extension GL_GOOGLE_include_directive : require
#define RLX_COOP_EMULATE
#include "matmul_coop.glsl"
