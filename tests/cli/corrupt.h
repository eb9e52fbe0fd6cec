/* The corrupt-file corpus (tests/cli/test_corrupt_corpus.c): generators derive broken models from the
 * fixtures (corrupt_gguf.c, corrupt_hf.c) and hand each one to the driver, which runs `rlx inspect`,
 * `rlx run` and `rlx generate` on it and checks how they end. */
#ifndef RLX_TESTS_CORRUPT_H
#define RLX_TESTS_CORRUPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a command must do with a mutated model. Whatever the expectation, it must end within the time
 * limit, with an exit status < 128, no sanitizer report, and exactly one line on stderr when it
 * fails. */
typedef enum {
    EXPECT_FAIL, /* a non-zero exit: the mutation provably breaks the file */
    EXPECT_ANY,  /* may succeed: the mutation can leave a valid file (the generator says why) */
    EXPECT_OK,   /* must succeed: an unmodified baseline, proving the harness reaches the model */
} corrupt_expect;

enum { CMD_INSPECT, CMD_RUN, CMD_GENERATE, CMD_COUNT };

typedef struct corrupt_case {
    const char *kind;               /* static: the mutation kind, the unit of the final tally */
    char what[224];                 /* this instance, e.g. "truncated at 1234 (end of kv 3 'general.name')" */
    corrupt_expect expect[CMD_COUNT];
} corrupt_case;

corrupt_case corrupt_case_make(const char *kind, corrupt_expect inspect, corrupt_expect run, corrupt_expect generate,
                               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* The driver. */
typedef struct corrupt_runner corrupt_runner;

/* A GGUF file: `data` is written to a file and the commands run on it. */
void corrupt_check_file(corrupt_runner *r, const corrupt_case *c, const uint8_t *data, size_t size);

/* An HF directory: a copy of the source directory (symlinks) in which `name` is replaced by `data`. */
typedef struct corrupt_override {
    const char *name;
    const uint8_t *data;
    size_t size;
} corrupt_override;
void corrupt_check_dir(corrupt_runner *r, const corrupt_case *c, const corrupt_override *ov, size_t n_ov);

/* Deterministic randomness: splitmix64 (Steele, Lea, Flood 2014), seeded per source. */
typedef struct corrupt_rng {
    uint64_t state;
} corrupt_rng;
uint64_t corrupt_rand(corrupt_rng *g);
uint64_t corrupt_below(corrupt_rng *g, uint64_t n); /* uniform enough in [0, n), n >= 1 */
corrupt_rng corrupt_rng_for(const char *label);      /* the fixed seed mixed with the source's name */

void corrupt_put_u32(uint8_t *p, uint32_t v);
void corrupt_put_u64(uint8_t *p, uint64_t v);
uint32_t corrupt_get_u32(const uint8_t *p);
uint64_t corrupt_get_u64(const uint8_t *p);

/* Generators: each emits its cases through the runner. They return false (after t_fail) only when
 * the fixture itself cannot be walked. */
bool corrupt_gguf_cases(corrupt_runner *r, const char *label, const uint8_t *data, size_t size);
bool corrupt_hf_cases(corrupt_runner *r, const char *label, const char *dir);

#endif
