// Loops with a constant trip count are unrolled (the counter is a constant
// in each copy of the body; break/continue on constants work); `if
// constexpr` and `if` on constants pick a branch at compile time.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

constexpr int kSteps = 3;

// CHECK-LABEL: func @unrolled(in x: f32[x.0], out o: f32[o.0]) {
PK_KERNEL void unrolled(In<float> x, Out<float> o) {
  // CHECK: [[X:%[0-9]+]] = load x
  auto t = x[_];
  // CHECK: [[M1:%[0-9]+]] = mul [[X]], [[X]]
  // CHECK: [[C1:%[0-9]+]] = const 1 : f32[] weak
  // CHECK: [[T1:%[0-9]+]] = add [[M1]], [[C1]] : f32[x.0] {{.*}}; t line [[@LINE+9]]
  // CHECK: [[M2:%[0-9]+]] = mul [[T1]], [[X]]
  // CHECK: [[C2:%[0-9]+]] = const 2 : f32[] weak
  // CHECK: [[T2:%[0-9]+]] = add [[M2]], [[C2]] : f32[x.0] {{.*}}; t line [[@LINE+6]]
  // CHECK: [[M3:%[0-9]+]] = mul [[T2]], [[X]]
  // CHECK: [[C3:%[0-9]+]] = const 3 : f32[] weak
  // CHECK: [[T3:%[0-9]+]] = add [[M3]], [[C3]] : f32[x.0] {{.*}}; t line [[@LINE+3]]
  // CHECK-NOT: mul
  for (int i = 0; i < kSteps; ++i)
    t = t * x[_] + float(i + 1);
  // CHECK: store o, [[T3]]
  // CHECK-NEXT: }
  o[_] = t;
}

// CHECK-LABEL: func @break_continue(
PK_KERNEL void break_continue(In<float> x, Out<float> o) {
  // CHECK: [[X:%[0-9]+]] = load x
  // CHECK: [[C0:%[0-9]+]] = const 10 : f32[] weak
  // CHECK: [[T0:%[0-9]+]] = add [[X]], [[C0]]
  // CHECK: [[C2:%[0-9]+]] = const 12 : f32[] weak
  // CHECK: [[T2:%[0-9]+]] = add [[T0]], [[C2]]
  // CHECK-NOT: add
  // CHECK: store o, [[T2]]
  auto t = x[_];
  int i = 10;
  while (true) {
    if (i % 2 == 1) {
      ++i;
      continue;
    }
    if (i > 12)
      break;
    t = t + float(i);
    ++i;
  }
  o[_] = t;
}

template <bool Square> void apply(Out<float> o, In<float> x) {
  if constexpr (Square)
    o[_] = x[_] * x[_];
  else
    o[_] = -x[_];
}

// CHECK-LABEL: func @branches(in x: f32[x.0], out a: f32[a.0], out b: f32[b.0]) {
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[SQ:%[0-9]+]] = mul [[X]], [[X]]
// CHECK:      store a, [[SQ]]
// CHECK-NOT:  neg
// CHECK:      [[E:%[0-9]+]] = exp [[X]]
// CHECK:      store b, [[E]]
// CHECK-NEXT: }
PK_KERNEL void branches(In<float> x, Out<float> a, Out<float> b) {
  apply<true>(a, x);
  if (kSteps > 5)
    b[_] = x[_];
  else
    b[_] = exp(x[_]);
}
