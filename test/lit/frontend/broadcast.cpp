// Refs of different ranks broadcast NumPy-style; a scalar stores into a
// whole ref.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @bias(in x: f32[x.0, x.1], in b: f32[b.0], out y: f32[y.0, y.1]) {
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0, x.1]
// CHECK:      [[B:%[0-9]+]] = load b : f32[b.0]
// CHECK:      [[S:%[0-9]+]] = add [[X]], [[B]] : f32[x.0, bcast(x.1, b.0)]
// CHECK:      store y, [[S]]
PK_KERNEL void bias(In<float, 2> x, In<float, 1> b, Out<float, 2> y) { y[_] = x[_] + b[_]; }

// CHECK-LABEL: func @rank3(in x: f32[x.0, x.1, x.2], in r: f32[], in c: f32[c.0, c.1], out y: f32[y.0, y.1, y.2]) {
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0, x.1, x.2]
// CHECK:      [[R:%[0-9]+]] = load r : f32[]
// CHECK:      [[XR:%[0-9]+]] = mul [[X]], [[R]] : f32[x.0, x.1, x.2]
// CHECK:      [[C:%[0-9]+]] = load c : f32[c.0, c.1]
// CHECK:      [[S:%[0-9]+]] = sub [[XR]], [[C]] : f32[x.0, bcast(x.1, c.0), bcast(x.2, c.1)]
// CHECK:      store y, [[S]]
PK_KERNEL void rank3(In<float, 3> x, In<float, 0> r, In<float, 2> c, Out<float, 3> y) {
  y[_] = x[_] * r[_] - c[_];
}

// CHECK-LABEL: func @scalar_store(out y: f32[y.0, y.1, y.2]) {
// CHECK:      [[Z:%[0-9]+]] = const 0 : f32[] weak
// CHECK:      store y, [[Z]]
PK_KERNEL void scalar_store(Out<float, 3> y) { y[_] = 0.0f; }
