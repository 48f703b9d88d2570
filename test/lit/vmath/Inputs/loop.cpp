// Input of vectorize-gcc.test / vectorize-clang.test: one `omp simd` loop per
// pk::vm function and type, each on its own line. The tests check the
// vectoriser's remark for each LINE NUMBER below: if you edit this file, keep
// the loops on lines 12-37 in this order or update the CHECK lines.
#include <pk/vmath.h>

#define PK_SIMD _Pragma("omp simd")
using F = float;
using D = double;

// clang-format off
void exp_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::exp(x[i]); }
void exp2_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::exp2(x[i]); }
void expm1_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::expm1(x[i]); }
void log_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::log(x[i]); }
void log2_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::log2(x[i]); }
void log1p_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::log1p(x[i]); }
void tanh_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::tanh(x[i]); }
void erf_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::erf(x[i]); }
void sin_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::sin(x[i]); }
void cos_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::cos(x[i]); }
void sigmoid_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::sigmoid(x[i]); }
void rsqrt_f(F *__restrict y, const F *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::rsqrt(x[i]); }
void pow_f(F *__restrict z, const F *__restrict x, const F *__restrict y, int n) { PK_SIMD for (int i = 0; i < n; ++i) z[i] = pk::vm::pow(x[i], y[i]); }
void exp_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::exp(x[i]); }
void exp2_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::exp2(x[i]); }
void expm1_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::expm1(x[i]); }
void log_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::log(x[i]); }
void log2_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::log2(x[i]); }
void log1p_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::log1p(x[i]); }
void tanh_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::tanh(x[i]); }
void erf_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::erf(x[i]); }
void sin_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::sin(x[i]); }
void cos_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::cos(x[i]); }
void sigmoid_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::sigmoid(x[i]); }
void rsqrt_d(D *__restrict y, const D *__restrict x, int n) { PK_SIMD for (int i = 0; i < n; ++i) y[i] = pk::vm::rsqrt(x[i]); }
void pow_d(D *__restrict z, const D *__restrict x, const D *__restrict y, int n) { PK_SIMD for (int i = 0; i < n; ++i) z[i] = pk::vm::pow(x[i], y[i]); }
// clang-format on
