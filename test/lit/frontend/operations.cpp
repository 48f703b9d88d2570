// where, math functions, clamp, pow, maximum/minimum, broadcast_to.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @relu(in x: f32[x.0], out o: f32[o.0]) {
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[M:%[0-9]+]] = gt [[X]], {{%[0-9]+}} : bool[x.0]
// CHECK:      [[R:%[0-9]+]] = select [[M]], [[X]], {{%[0-9]+}} : f32[x.0]
// CHECK:      store o, [[R]]
PK_KERNEL void relu(In<float> x, Out<float> o) { o[_] = where(x[_] > 0, x[_], 0); }

// CHECK-LABEL: func @math(
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[SG:%[0-9]+]] = sigmoid [[X]] : f32[x.0]
// CHECK:      [[AB:%[0-9]+]] = abs [[X]] : f32[x.0]
// CHECK:      [[RS:%[0-9]+]] = rsqrt {{%[0-9]+}} : f32[x.0]
// CHECK:      [[CL:%[0-9]+]] = clamp {{%[0-9]+}}, {{%[0-9]+}}, {{%[0-9]+}} : f32[x.0]
// CHECK:      [[PW:%[0-9]+]] = pow [[X]], {{%[0-9]+}} : f32[x.0]
// CHECK:      [[MN:%[0-9]+]] = minimum [[X]], {{%[0-9]+}} : f32[x.0]
// CHECK:      [[MX:%[0-9]+]] = maximum [[X]], [[MN]] : f32[x.0]
PK_KERNEL void math(In<float> x, Out<float> o) {
  o[_] = clamp(sigmoid(x[_]) + rsqrt(abs(x[_]) + 1), 0.0f, 1.0f) + pow(x[_], 2) +
         maximum(x[_], minimum(x[_], 1));
}

// Math on an integer array computes in double.
// CHECK-LABEL: func @int_math(
// CHECK:      [[I:%[0-9]+]] = load i : i32[i.0]
// CHECK:      [[D:%[0-9]+]] = cast [[I]] : f64[i.0]
// CHECK:      [[E:%[0-9]+]] = exp [[D]] : f64[i.0]
// CHECK:      store o, [[E]]
PK_KERNEL void int_math(In<int32_t> i, Out<double> o) { o[_] = exp(i[_]); }

// CHECK-LABEL: func @broadcast_to_ref(
// CHECK:      [[ONE:%[0-9]+]] = const 1 : f32[] weak
// CHECK:      [[SH:%[0-9]+]] = load x : f32[x.0, x.1]
// CHECK:      [[B:%[0-9]+]] = view.broadcast_to [[ONE]], [[SH]] {{.*}}: f32[x.0, x.1]
// CHECK:      store o, [[B]]
PK_KERNEL void broadcast_to_ref(In<float, 2> x, Out<float, 2> o) { o[_] = broadcast_to(1.0f, x); }
