// Compound assignment (language.md §2): `ref[_] op= v` is the store
// `ref[_] = ref[_] op v`, promoted as `ref[_] op v` and converted to the
// ref's type by the store; `t op= v` on a local is `t = t op v`, a new SSA
// value converted back to t's type, storing nothing.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @accumulate(inout acc: f32[acc.0, acc.1], in v: f32[v.0]) {
PK_KERNEL void accumulate(InOut<float, 2> acc, In<float, 1> v) {
  // CHECK: [[V:%[0-9]+]] = load v : f32[v.0]
  // CHECK: [[ACC:%[0-9]+]] = load acc : f32[acc.0, acc.1]
  // CHECK: [[SUM:%[0-9]+]] = add [[ACC]], [[V]] : f32[acc.0, bcast(v.0, acc.1)] {{.*}}; line [[@LINE+1]]
  acc[_] += v[_];
  // A second update reads the first one's value.
  // CHECK-DAG: [[HALF:%[0-9]+]] = const 0.5 : f32[] weak
  // CHECK-DAG: [[SEEN:%[0-9]+]] = view.broadcast_to [[SUM]], [[ACC]] {{.*}}: f32[acc.0, acc.1]
  // CHECK: [[PROD:%[0-9]+]] = mul [[SEEN]], [[HALF]] : f32[acc.0, acc.1]
  // CHECK: store acc, [[PROD]]
  // CHECK-NEXT: }
  acc[_] *= 0.5f;
}

// An Out after its first write; the 16-bit ref computes in float and its
// store rounds; an int32 InOut updated with a float array is promoted to
// float, then converted back by the store. (A store that a later store of
// the same ref overwrites is dropped from the dump.)
// CHECK-LABEL: func @mixed(in x: f32[x.0], out h: f16[h.0], inout k: i32[k.0]) {
PK_KERNEL void mixed(In<float> x, Out<pk::half> h, InOut<int32_t> k) {
  // CHECK: [[X:%[0-9]+]] = load x : f32[x.0]
  // CHECK: [[R:%[0-9]+]] = round_f16 [[X]] : f32[x.0]
  h[_] = x[_];
  // CHECK-DAG: [[ONE:%[0-9]+]] = const 1 : f32[] weak
  // CHECK-DAG: [[HS:%[0-9]+]] = view.broadcast_to [[R]], {{%[0-9]+}} {{.*}}: f32[h.0]
  // CHECK: [[HN:%[0-9]+]] = sub [[HS]], [[ONE]] : f32[h.0]
  // CHECK: store h, [[HN]]
  h[_] -= 1;
  // CHECK: [[THREE:%[0-9]+]] = const 3 : i32[] weak
  // CHECK: [[K:%[0-9]+]] = load k : i32[k.0]
  // CHECK: [[REM:%[0-9]+]] = rem [[K]], [[THREE]] : i32[k.0]
  k[_] %= 3;
  // CHECK: [[KS:%[0-9]+]] = view.broadcast_to [[REM]], [[K]] {{.*}}: i32[k.0]
  // CHECK: [[KF:%[0-9]+]] = cast [[KS]] : f32[k.0]
  // CHECK: [[KX:%[0-9]+]] = div [[KF]], [[X]] : f32[bcast(x.0, k.0)]
  // CHECK: [[KI:%[0-9]+]] = cast [[KX]] : i32[bcast(x.0, k.0)]
  // CHECK: store k, [[KI]]
  k[_] /= x[_];
}

// A local snapshot updated with `+=` is a new value; nothing is stored
// until `o[_] = t`. On an int local, `t += 0.5` converts back to int.
// CHECK-LABEL: func @locals(in x: f32[x.0], out o: f32[o.0], out n: i32[n.0]) {
PK_KERNEL void locals(In<float> x, Out<float> o, Out<int32_t> n) {
  // CHECK: [[X:%[0-9]+]] = load x : f32[x.0]
  o[_] = x[_];
  auto t = o[_];
  // CHECK: [[T:%[0-9]+]] = add {{%[0-9]+}}, {{%[0-9]+}} : f32[o.0] {{.*}}; t line [[@LINE+2]]
  // CHECK-NOT: store
  t += 2.0f;
  // CHECK: [[I:%[0-9]+]] = cast [[X]] : i32[x.0]
  pk::Array<int32_t> i = cast<int32_t>(x[_]);
  // CHECK: [[IF:%[0-9]+]] = cast [[I]] : f64[x.0]
  // CHECK: [[IS:%[0-9]+]] = add [[IF]], {{%[0-9]+}} : f64[x.0]
  // CHECK: [[II:%[0-9]+]] = cast [[IS]] : i32[x.0] {{.*}}; i line [[@LINE+1]]
  i += 0.5;
  // CHECK: store o, [[T]]
  o[_] = t;
  // CHECK: store n, [[II]]
  n[_] = i;
}
