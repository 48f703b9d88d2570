// pk's math functions on C++ scalars (language.md §3) are the same ops as on
// arrays, over uniform rank-0 values, in the precision of their argument:
// exp of a float is a float exp, of an integer a double one.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @scale(in x: f32[x.0, x.1], out y: f32[y.0, y.1], scalar eps: f32, scalar n: i64) {
PK_KERNEL void scale(In<float, 2> x, Out<float, 2> y, float eps, int64_t n) {
  // CHECK: [[X:%[0-9]+]] = load x : f32[x.0, x.1]
  // CHECK: [[N:%[0-9]+]] = param n : i64[] weak
  // CHECK: [[NF:%[0-9]+]] = cast [[N]] : f32[] weak
  // CHECK: [[R:%[0-9]+]] = rsqrt [[NF]] : f32[] weak
  // CHECK: [[XR:%[0-9]+]] = mul [[X]], [[R]] : f32[x.0, x.1]
  // CHECK: [[EPS:%[0-9]+]] = param eps : f32[] weak
  // CHECK: [[E:%[0-9]+]] = exp [[EPS]] : f32[] weak
  // CHECK: [[A:%[0-9]+]] = abs [[EPS]] : f32[] weak
  // CHECK: [[EA:%[0-9]+]] = mul [[E]], [[A]] : f32[] weak
  // CHECK: [[ONE:%[0-9]+]] = const 1 : f32[] weak
  // CHECK: [[M:%[0-9]+]] = maximum [[EPS]], [[ONE]] : f32[] weak
  // CHECK: [[EAM:%[0-9]+]] = add [[EA]], [[M]] : f32[] weak
  // CHECK: add [[XR]], [[EAM]] : f32[x.0, x.1]
  y[_] = x[_] * rsqrt(cast<float>(n)) + (exp(eps) * abs(eps) + maximum(eps, 1.0f));
}

// An integer argument computes in double; a local computed from scalars is
// uniform too.
// CHECK-LABEL: func @integer_argument(
PK_KERNEL void integer_argument(In<double> x, Out<double> y, int32_t k) {
  // CHECK: [[K:%[0-9]+]] = param k : i32[] weak
  // CHECK: [[KD:%[0-9]+]] = cast [[K]] : f64[] weak
  // CHECK: [[L:%[0-9]+]] = log1p [[KD]] : f64[] weak
  // CHECK: [[TWO:%[0-9]+]] = const 2 : f64[] weak
  // CHECK: [[P:%[0-9]+]] = pow [[L]], [[TWO]] : f64[] weak {{.*}}; s line [[@LINE+1]]
  auto s = pow(log1p(k), 2);
  // CHECK: mul {{%[0-9]+}}, [[P]] : f64[x.0]
  y[_] = x[_] * s;
}

// With `using namespace std;` as well, the unqualified call is not
// ambiguous: std::exp(float) (an exact non-template match) is chosen, and
// it is the same op.
namespace with_std {
using namespace std;
// CHECK-LABEL: func @with_std::both(
PK_KERNEL void both(In<float> x, Out<float> y, float eps) {
  // CHECK: [[EPS:%[0-9]+]] = param eps : f32[] weak
  // CHECK: [[E:%[0-9]+]] = exp [[EPS]] : f32[] weak
  // CHECK: [[T:%[0-9]+]] = tanh [[E]] : f32[] weak
  // CHECK: mul {{%[0-9]+}}, [[T]] : f32[x.0]
  y[_] = x[_] * tanh(exp(eps));
}
} // namespace with_std
