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
