// `auto t = ref[_];` of a storage-type ref (pk::half, pk::bfloat16, int8_t,
// uint8_t) is a local of the type the elements compute in (pk.h's
// WholeProxy<T, R> is an Array<ComputeType<T>>): float for the 16-bit types,
// int32_t for the 8-bit ones. pkc refused such a local until 2026-12-04
// (found by the fuzz generator's 16-bit refs).
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @snapshot16(inout y: bf16[y.0], in h: f16[h.0], out o: f16[o.0]) {
// CHECK:      [[OLD:%[0-9]+]] = load y : f32[y.0]
// CHECK:      [[H:%[0-9]+]] = load h : f32[h.0]
// CHECK:      [[SUM:%[0-9]+]] = add [[OLD]], [[H]] : f32[bcast(y.0, h.0)]
// CHECK:      store y, [[SUM]]
// CHECK:      store o, [[OLD]]
PK_KERNEL void snapshot16(InOut<pk::bfloat16> y, In<pk::half> h,
                          Out<pk::half> o) {
  auto old = y[_];
  auto t = h[_];
  y[_] = old + t;
  o[_] = old;
}

// CHECK-LABEL: func @snapshot8(in q: i8[q.0], in u: u8[u.0], out o: i32[o.0]) {
// CHECK:      [[Q:%[0-9]+]] = load q : i32[q.0]
// CHECK:      [[U:%[0-9]+]] = load u : i32[u.0]
// CHECK:      mul [[Q]], [[U]] : i32[bcast(q.0, u.0)]
PK_KERNEL void snapshot8(In<int8_t> q, In<uint8_t> u, Out<int32_t> o) {
  auto a = q[_];
  auto b = u[_];
  o[_] = a * b;
}
