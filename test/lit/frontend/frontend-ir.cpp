// The frontend's own Graph IR (before shape inference), for the operations
// later stages may still reject: reductions, index, shape ops, matmul,
// transpose. `--pk-print-after-all` prints it to stderr whatever happens next.
// RUN: %pkc --pk-print-after-all --emit=graph %s -- %pkflags > %t.log 2>&1 || true
// RUN: FileCheck %s < %t.log
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @rmsnorm(in x: f32[x.0, x.1], in w: f32[w.0], out y: f32[y.0, y.1], scalar eps: f32) {
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[SQ:%[0-9]+]] = mul [[X]], [[X]]
// CHECK:      [[MS:%[0-9]+]] = reduce.mean [[SQ]] axes=[-1] keepdims : f32{{.*}}; ms line [[@LINE+9]]
// CHECK:      [[EPS:%[0-9]+]] = param eps : f32
// CHECK:      [[A:%[0-9]+]] = add [[MS]], [[EPS]]
// CHECK:      [[R:%[0-9]+]] = rsqrt [[A]]
// CHECK:      [[XR:%[0-9]+]] = mul [[X]], [[R]]
// CHECK:      [[W:%[0-9]+]] = load w
// CHECK:      [[Y:%[0-9]+]] = mul [[XR]], [[W]]
// CHECK:      store y, [[Y]]
PK_KERNEL void rmsnorm(In<float, 2> x, In<float, 1> w, Out<float, 2> y, float eps) {
  auto ms = mean(x[_] * x[_], -1, keepdims);
  y[_] = x[_] * rsqrt(ms + eps) * w[_];
}

// sum of bool counts in i64; mean of integers is f64; all axes: axes=[].
// CHECK-LABEL: func @reductions(
// CHECK:      [[M:%[0-9]+]] = load m : bool
// CHECK:      [[MI:%[0-9]+]] = cast [[M]] : i64
// CHECK:      [[CNT:%[0-9]+]] = reduce.sum [[MI]] axes=[] : i64
// CHECK:      store n, [[CNT]]
// CHECK:      [[I:%[0-9]+]] = load i : i32
// CHECK:      [[ID:%[0-9]+]] = cast [[I]] : f64
// CHECK:      [[AVG:%[0-9]+]] = reduce.mean [[ID]] axes=[0] : f64
// CHECK:      store avg, [[AVG]]
// CHECK:      [[X:%[0-9]+]] = load x : f32
// CHECK:      [[MX:%[0-9]+]] = reduce.max [[X]] axes=[1] keepdims : f32
// CHECK:      [[MN:%[0-9]+]] = reduce.min [[X]] axes=[-2] : f32
PK_KERNEL void reductions(In<bool, 2> m, In<int32_t, 2> i, In<float, 2> x, Out<int64_t, 0> n, Out<double, 1> avg, Out<float, 2> e) {
  n[_] = sum(m[_]);
  avg[_] = mean(i[_], 0);
  constexpr int kRows = -2;
  e[_] = max(x[_], 1, keepdims) + expand_dims(min(x[_], kRows), 0);
}

// CHECK-LABEL: func @shapes(
// CHECK:      [[X:%[0-9]+]] = load x : f32
// CHECK:      [[E:%[0-9]+]] = view.expand_dims [[X]] axis=0 : f32
// CHECK:      [[S:%[0-9]+]] = view.squeeze [[E]] axis=-3 : f32
// CHECK:      [[IX:%[0-9]+]] = index [[X]] axis=-1 : i64
// CHECK:      [[IY:%[0-9]+]] = index [[X]] axis=0 : i64
// CHECK:      [[LE:%[0-9]+]] = le [[IX]], [[IY]] : bool
// CHECK:      [[T:%[0-9]+]] = view.transpose [[X]] : f32
// CHECK:      [[MM:%[0-9]+]] = matmul [[S]], [[T]] : f32
// CHECK:      select [[LE]], [[MM]], {{%[0-9]+}} : f32
PK_KERNEL void shapes(In<float, 2> x, Out<float, 2> o) {
  auto s = squeeze(expand_dims(x[_], 0), -3);
  auto causal = index(x[_], -1) <= index(x[_], 0);
  o[_] = where(causal, matmul(s, transpose(x[_])), 0.0f);
}

// Axes are integer constant expressions: literals, constexpr values, loop
// counters of unrolled loops.
// CHECK-LABEL: func @constant_axes(
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[M0:%[0-9]+]] = reduce.max [[X]] axes=[0] keepdims
// CHECK:      [[T0:%[0-9]+]] = sub [[X]], [[M0]]
// CHECK:      [[M1:%[0-9]+]] = reduce.max [[T0]] axes=[1] keepdims
// CHECK:      [[T1:%[0-9]+]] = sub [[T0]], [[M1]]
// CHECK:      [[S:%[0-9]+]] = reduce.sum [[T1]] axes=[-1] keepdims
// CHECK:      div [[T1]], [[S]]
constexpr int kLast = -1;
PK_KERNEL void constant_axes(In<float, 3> x, Out<float, 3> o) {
  auto t = x[_];
  for (int a = 0; a < 2; ++a)
    t = t - max(t, a, keepdims);
  o[_] = t / sum(t, kLast, keepdims);
}
