#version 450
// MATMUL of a decode batch over F16, Q4_K or Q6_K weights on VK_NV_cooperative_matrix: the kernel is
// matmul_batch.glsl.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
#include "matmul_batch.glsl"
