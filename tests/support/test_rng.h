/* The tests' random numbers: splitmix64 (Steele, Lea, Flood 2014), one state per test program so
 * that each program's inputs repeat run after run whatever other programs draw. */
#ifndef RLX_TEST_RNG_H
#define RLX_TEST_RNG_H

#include <stdint.h>

static inline uint64_t t_splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* [0, 1) from the top 24 bits: every value exact in a float */
static inline float t_unit(uint64_t *state) { return (float)((double)(t_splitmix64(state) >> 40) / 16777216.0); }

#endif
