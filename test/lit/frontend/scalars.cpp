// Scalar parameters are uniform (rank-0, weak) values; C++ scalar
// expressions, including <cmath> on scalars, become rank-0 nodes.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
#include <cmath>
using namespace pk::lang;

// CHECK-LABEL: func @axpby(in x: f32[x.0], in y: f32[y.0], out o: f32[o.0], scalar a: f32, scalar b: f32) {
// CHECK:      [[A:%[0-9]+]] = param a : f32[] weak
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0]
// CHECK:      [[AX:%[0-9]+]] = mul [[A]], [[X]] : f32[x.0]
// CHECK:      [[B:%[0-9]+]] = param b : f32[] weak
// CHECK:      [[Y:%[0-9]+]] = load y : f32[y.0]
// CHECK:      [[BY:%[0-9]+]] = mul [[B]], [[Y]] : f32[y.0]
// CHECK:      [[R:%[0-9]+]] = add [[AX]], [[BY]] : f32[bcast(x.0, y.0)]
// CHECK:      store o, [[R]]
PK_KERNEL void axpby(In<float> x, In<float> y, Out<float> o, float a, float b) {
  o[_] = a * x[_] + b * y[_];
}

// CHECK-LABEL: func @scalar_math(in x: f64[x.0], out o: f64[o.0], scalar t: f64, scalar n: i64) {
// CHECK:      [[T:%[0-9]+]] = param t : f64[] weak
// CHECK:      [[SQ:%[0-9]+]] = sqrt [[T]] : f64[] weak
// CHECK:      [[N:%[0-9]+]] = param n : i64[] weak
// CHECK:      [[NF:%[0-9]+]] = cast [[N]] : f64[] weak
// CHECK:      [[K:%[0-9]+]] = div [[SQ]], [[NF]] : f64[] weak {{.*}}; k line [[@LINE+5]]
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[R:%[0-9]+]] = mul [[X]], [[K]] : f64[x.0]
// CHECK:      store o, [[R]]
PK_KERNEL void scalar_math(In<double> x, Out<double> o, double t, int64_t n) {
  double k = std::sqrt(t) / n;
  o[_] = x[_] * k;
}

// std::max on scalars is `a < b ? b : a`, exactly.
// CHECK-LABEL: func @scalar_max(
// CHECK:      [[S:%[0-9]+]] = param s : f32[] weak
// CHECK:      [[Z:%[0-9]+]] = const 0 : f32[] weak
// CHECK:      [[LT:%[0-9]+]] = lt [[S]], [[Z]] : bool[] weak
// CHECK:      [[M:%[0-9]+]] = select [[LT]], [[Z]], [[S]] : f32[] weak
// CHECK:      mul {{%[0-9]+}}, [[M]] : f32[x.0]
PK_KERNEL void scalar_max(In<float> x, Out<float> o, float s) { o[_] = x[_] * std::max(s, 0.0f); }
