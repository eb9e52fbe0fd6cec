#version 450
// MATMUL for many rows on VK_NV_cooperative_matrix (16 x 16 x 16 f16 x f16 -> f32): the kernel is
// matmul_coop.glsl. The installed glslang (11) knows GL_NV_cooperative_matrix, not the KHR one.
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
#include "matmul_coop.glsl"
