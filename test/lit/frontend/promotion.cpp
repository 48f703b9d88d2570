// dtypes follow pk.h: a floating literal keeps a float array float (weak
// scalar); int32 with float is float; an integer array with a floating
// scalar takes the scalar's type; bool arithmetic promotes to int32;
// comparisons compute in the promoted type and give bool.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @weak_literal(in x: f32[x.0], out o: f32[o.0]) {
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0]
// CHECK:      [[H:%[0-9]+]] = const 0.5 : f32[] weak
// CHECK:      [[M:%[0-9]+]] = mul [[X]], [[H]] : f32[x.0]
// CHECK:      [[ONE:%[0-9]+]] = const 1 : f32[] weak
// CHECK:      [[A:%[0-9]+]] = add [[M]], [[ONE]] : f32[x.0]
// CHECK:      store o, [[A]]
// CHECK-NOT:  f64
PK_KERNEL void weak_literal(In<float> x, Out<float> o) { o[_] = x[_] * 0.5 + 1; }

// CHECK-LABEL: func @mixed(in i: i32[i.0], in f: f32[f.0], in l: i64[l.0], out o: f64[o.0]) {
// CHECK:      [[I:%[0-9]+]] = load i : i32[i.0]
// CHECK:      [[F:%[0-9]+]] = load f : f32[f.0]
// CHECK:      [[IF:%[0-9]+]] = cast [[I]] : f32[i.0]
// CHECK:      [[S:%[0-9]+]] = add [[IF]], [[F]] : f32[
// CHECK:      [[L:%[0-9]+]] = load l : i64[l.0]
// CHECK:      [[H:%[0-9]+]] = const 0.5 : f64[] weak
// CHECK:      [[LD:%[0-9]+]] = cast [[L]] : f64[l.0]
// CHECK:      [[P:%[0-9]+]] = mul [[LD]], [[H]] : f64[l.0]
// CHECK:      [[SD:%[0-9]+]] = cast [[S]] : f64[
// CHECK:      [[R:%[0-9]+]] = mul [[SD]], [[P]] : f64[
// CHECK:      store o, [[R]]
PK_KERNEL void mixed(In<int32_t> i, In<float> f, In<int64_t> l, Out<double> o) {
  o[_] = (i[_] + f[_]) * (l[_] * 0.5);
}

// CHECK-LABEL: func @bools(
// CHECK:      [[A:%[0-9]+]] = load a : bool[a.0]
// CHECK:      [[B:%[0-9]+]] = load b : bool[b.0]
// CHECK:      [[AI:%[0-9]+]] = cast [[A]] : i32[a.0]
// CHECK:      [[BI:%[0-9]+]] = cast [[B]] : i32[b.0]
// CHECK:      [[S:%[0-9]+]] = add [[AI]], [[BI]] : i32[
// CHECK:      store o, [[S]]
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0]
// CHECK:      [[ONE:%[0-9]+]] = const 1 : f32[] weak
// CHECK:      [[LT:%[0-9]+]] = lt [[X]], [[ONE]] : bool[x.0]
// CHECK:      [[NA:%[0-9]+]] = not [[A]] : bool[a.0]
// CHECK:      [[M:%[0-9]+]] = and [[LT]], [[NA]] : bool[
// CHECK:      store m, [[M]]
PK_KERNEL void bools(In<bool> a, In<bool> b, In<float> x, Out<int32_t> o, Out<bool> m) {
  o[_] = a[_] + b[_];
  m[_] = (x[_] < 1) & !a[_];
}

// Comparing int32 with float compares in float; storing converts to the
// ref's type.
// CHECK-LABEL: func @casts(
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0]
// CHECK:      [[XI:%[0-9]+]] = cast [[X]] : i64[x.0]
// CHECK:      [[ONE:%[0-9]+]] = const 1 : i64[] weak
// CHECK:      [[S:%[0-9]+]] = add [[XI]], [[ONE]] : i64[x.0]
// CHECK:      store o, [[S]]
// CHECK:      [[K:%[0-9]+]] = load k : i32[k.0]
// CHECK:      [[KF:%[0-9]+]] = cast [[K]] : f32[k.0]
// CHECK:      [[GT:%[0-9]+]] = gt [[KF]], [[X]] : bool[
// CHECK:      [[GF:%[0-9]+]] = cast [[GT]] : f32[
// CHECK:      store f, [[GF]]
PK_KERNEL void casts(In<float> x, In<int32_t> k, Out<int64_t> o, Out<float> f) {
  o[_] = cast<int64_t>(x[_]) + 1;
  f[_] = k[_] > x[_];
}
