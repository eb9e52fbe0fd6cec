/* The Gated DeltaNet op tests (test_cpu_recurrent.c), named in test_cpu_ops' op table. */
#ifndef RLX_TEST_CPU_RECURRENT_H
#define RLX_TEST_CPU_RECURRENT_H

void test_STATE(void);
void test_CAUSAL_CONV(void);
void test_DELTA_RULE(void);
void test_DELTA_GATE(void);
void test_L2_NORM(void);
void test_SIGMOID(void);
void test_SLICE(void);
void test_SCALE_ROWS(void);
void test_recurrent_done(void); /* frees the tests' backend */

#endif
