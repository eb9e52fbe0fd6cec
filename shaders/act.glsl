// Activations, written to stay finite where the naive formulas overflow.

// 1 / (1 + e^-x) (ir/ops.def SIGMOID); for x << 0, e^-x is inf and the quotient 0.
float sigmoid(float x) { return 1.0 / (1.0 + exp(-x)); }

// x * sigmoid(x); for x << 0, exp(-x) is inf and the quotient is -0, as it should be.
float silu(float x) { return x / (1.0 + exp(-x)); }

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (ir/ops.def). tanh from exp(-2|u|) so that large
// |u| gives +-1 instead of inf/inf.
float gelu_tanh(float x) {
    float u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
    float t = exp(-2.0 * abs(u));
    float th = (1.0 - t) / (1.0 + t);
    return 0.5 * x * (1.0 + (u < 0.0 ? -th : th));
}
