// The element type of the session's K/V pools. The *_f16 kernels (shaders/kernels.def) define
// RLX_KV_F16 before including their kernel: pool elements are float16_t in memory (16-bit storage,
// storageBuffer16BitAccess; runtime/vk_backend.c refuses F16 pools without it) and float in
// registers. kv_store rounds a value once, as it is stored; kv_round gives the value a store will
// hold, for a kernel that also uses the value it writes (attention.glsl ATTN_STEP), so that it uses
// what the cache holds. Conversions round to nearest or toward zero, as the driver does (SPIR-V
// OpFConvert without a rounding mode): a relative error below 2^-10 for normal values.
#ifdef RLX_KV_F16
#extension GL_EXT_shader_16bit_storage : require
#define kv_t float16_t
#define kv4_t f16vec4
#define kv_round(x) float(float16_t(x))
#else
#define kv_t float
#define kv4_t vec4
#define kv_round(x) (x)
#endif
#define kv_store(x) kv_t(x)

// A load unit of a pool row (attention.glsl VEC): up to 4 consecutive elements as they are in memory,
// 4 halves in a uvec2 (converted as they are used, so a unit of F16 takes 2 registers, not 4) or 4
// floats; a unit of VEC < 4 elements fills its first ones. kvu_get(u, i) is element i (a constant
// once unrolled).
#ifdef RLX_KV_F16
#define kvu_t uvec2
#define kv2u_t uint
float kvu_get(uvec2 u, uint i) { return i < 2u ? unpackHalf2x16(u.x)[i] : unpackHalf2x16(u.y)[i - 2u]; }
uvec2 kvu_of2(uint x) { return uvec2(x, 0u); }
#define kvu_of1(x) uvec2(packHalf2x16(vec2(float(x), 0.0)), 0u) // exact: x is a half
#else
#define kvu_t vec4
#define kv2u_t vec2
float kvu_get(vec4 u, uint i) { return u[i]; }
vec4 kvu_of2(vec2 x) { return vec4(x, 0.0, 0.0); }
vec4 kvu_of1(float x) { return vec4(x, 0.0, 0.0, 0.0); }
#endif
