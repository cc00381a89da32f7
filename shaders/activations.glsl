// Epilogue activations, selected by ACT: 0 none, 1 ReLU, 2 GELU (exact, erf form:
// PyTorch's default), 3 GELU (tanh approximation), 4 SiLU, 5 tanh.
#ifndef VKF_ACTIVATIONS_GLSL
#define VKF_ACTIVATIONS_GLSL

#ifndef ACT
#define ACT 0
#endif

// erfc(z) for z >= 0 with fractional error below 1.2e-7 everywhere (Numerical Recipes'
// Chebyshev fit). GLSL has no erf, and 1 + erf(x) for negative x must keep its relative
// precision or GELU's left tail (values near -1e-6) is wrong in every digit.
float erfc_pos(float z) {
  float t = 1.0 / (1.0 + 0.5 * z);
  float p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
            t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  return t * exp(-z * z + p);
}

float gelu_erf(float x) {
  float c = erfc_pos(abs(x) * 0.70710678118654752);
  float phi = x >= 0.0 ? 1.0 - 0.5 * c : 0.5 * c;  // Phi(x), the normal CDF
  return x * phi;
}

// 0.5 x (1 + tanh(u)) == x * sigmoid(2u): no tanh overflow for large |u|.
float gelu_tanh(float x) {
  float u = 0.79788456080286536 * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * u));
}

// SiLU (swish): x sigmoid(x). exp(-x) overflows to +inf for x < -88 and the quotient
// is then -0, the right limit; no branch needed.
float silu(float x) { return x / (1.0 + exp(-x)); }

// tanh with its relative precision everywhere (GLSL's tanh is the driver's, of no stated
// precision): near 0 its Taylor series (the first omitted term 62 x^9 / 2835, below 4e-7
// relative at |x| = 1/4), else (1 - e^-2|x|) / (1 + e^-2|x|), which saturates to +-1.
float tanh_precise(float x) {
  const float a = abs(x);
  if (a < 0.25) {
    const float x2 = x * x;
    return x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0))));
  }
  const float t = exp(-2.0 * a);
  return sign(x) * (1.0 - t) / (1.0 + t);
}

float activate(float x) {
#if ACT == 1
  return max(x, 0.0);
#elif ACT == 2
  return gelu_erf(x);
#elif ACT == 3
  return gelu_tanh(x);
#elif ACT == 4
  return silu(x);
#elif ACT == 5
  return tanh_precise(x);
#else
  return x;
#endif
}

#endif
