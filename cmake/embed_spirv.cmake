# Turns one SPIR-V binary into a C source holding it as a uint32_t array (SPIR-V is a stream of
# little-endian 32-bit words, so the array is correctly aligned for vkCreateShaderModule).
# Usage: cmake -DIN=x.spv -DOUT=x.spv.c -DNAME=x -P embed_spirv.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n_hex)
math(EXPR rem "${n_hex} % 8")
if(n_hex EQUAL 0 OR NOT rem EQUAL 0)
  message(FATAL_ERROR "${IN}: ${n_hex} hex digits is not a whole number of 32-bit SPIR-V words")
endif()
math(EXPR n_words "${n_hex} / 8")
# bytes b0 b1 b2 b3 of each little-endian word -> 0xb3b2b1b0
string(REGEX REPLACE "([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])([0-9a-f][0-9a-f])"
       "0x\\4\\3\\2\\1u," words "${hex}")
string(REGEX REPLACE "((0x[0-9a-f]+u,){8})" "\\1\n    " words "${words}")
file(WRITE "${OUT}" "/* Generated from ${NAME}.comp by cmake/embed_spirv.cmake; do not edit. */
#include <stddef.h>
#include <stdint.h>
extern const uint32_t rlx_spv_${NAME}[];
extern const size_t rlx_spv_${NAME}_words;
const uint32_t rlx_spv_${NAME}[] = {
    ${words}
};
const size_t rlx_spv_${NAME}_words = ${n_words};
")
