// Locals are SSA names: each assignment makes a new value named after the
// local; a read of an Out/InOut after a write sees the written value
// (broadcast to the ref's shape), not memory.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @ssa(in x: f32[x.0], out o: f32[o.0]) {
PK_KERNEL void ssa(In<float> x, Out<float> o) {
  // CHECK: [[X:%[0-9]+]] = load x : f32[x.0]
  // CHECK: [[T1:%[0-9]+]] = mul [[X]], {{%[0-9]+}} : f32[x.0] {{.*}}; t line [[@LINE+1]]
  auto t = x[_] * 2.0f;
  // CHECK: [[T2:%[0-9]+]] = add [[T1]], {{%[0-9]+}} : f32[x.0] {{.*}}; t line [[@LINE+1]]
  t = t + 1.0f;
  // CHECK: [[T3:%[0-9]+]] = mul [[T2]], [[T2]] : f32[x.0] {{.*}}; t line [[@LINE+1]]
  t = t * t;
  // CHECK: store o, [[T3]]
  // CHECK-NEXT: }
  o[_] = t;
}

// CHECK-LABEL: func @inout(in x: f32[x.0], inout acc: f32[acc.0], out o: f32[o.0]) {
PK_KERNEL void inout(In<float> x, InOut<float> acc, Out<float> o) {
  // CHECK: [[ACC:%[0-9]+]] = load acc : f32[acc.0]
  // CHECK: [[X:%[0-9]+]] = load x : f32[x.0]
  // CHECK: [[SUM:%[0-9]+]] = add [[ACC]], [[X]]
  acc[_] = acc[_] + x[_];
  // CHECK: [[SEEN:%[0-9]+]] = view.broadcast_to [[SUM]], [[ACC]] {{.*}}: f32[acc.0] {{.*}}; acc line [[@LINE+3]]
  // CHECK: [[OV:%[0-9]+]] = mul [[SEEN]], {{%[0-9]+}} : f32[acc.0]
  // CHECK: store o, [[OV]]
  o[_] = acc[_] * 0.5f;
  // CHECK: [[OSEEN:%[0-9]+]] = view.broadcast_to [[OV]], {{%[0-9]+}} {{.*}}: f32[o.0] {{.*}}; o line [[@LINE+3]]
  // CHECK: [[NEW:%[0-9]+]] = sub [[OSEEN]], {{%[0-9]+}} : f32[o.0]
  // CHECK: store acc, [[NEW]]
  acc[_] = o[_] - 1.0f;
  // CHECK-NEXT: }
}

// A snapshot `auto s = o[_]` is a value; assigning to it stores nothing.
// CHECK-LABEL: func @snapshot(
PK_KERNEL void snapshot(In<float> x, Out<float> o, Out<float> p) {
  // CHECK: [[X:%[0-9]+]] = load x
  // CHECK: store o, [[X]]
  o[_] = x[_];
  // CHECK: [[S:%[0-9]+]] = view.broadcast_to [[X]], {{%[0-9]+}} {{.*}}: f32[o.0]
  auto s = o[_];
  // CHECK: [[S2:%[0-9]+]] = mul [[S]], {{%[0-9]+}} : f32[o.0] {{.*}}; s line [[@LINE+1]]
  s = s * 3.0f;
  // CHECK-NOT: store o
  // CHECK: store p, [[S2]]
  // CHECK-NEXT: }
  p[_] = s;
}
