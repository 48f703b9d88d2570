// Constant tables (language.md §4): a const or constexpr array of numbers
// (C array of any rank, std::array, static constexpr, namespace scope)
// indexed by a compile-time constant is that element, a weak constant of the
// element's type: Horner's rule over a coefficient table unrolls to
// multiply-adds with the coefficients as constants. (Errors:
// diagnostics/tables.cpp.)
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>

#include <array>
#include <iterator>
using namespace pk::lang;

constexpr double kOffsets[] = {0.5, 0.25};

// The coefficients are built once, at the declaration; each c[i] of the
// unrolled loop is one of them (no load, no select).
// CHECK-LABEL: func @horner(in x: f32[x.0], out y: f32[y.0]) {
// CHECK:      [[C2:%[0-9]+]] = const 0.25 : f32[] weak {{.*}}; line [[@LINE+13]]
// CHECK-NEXT: [[C3:%[0-9]+]] = const 0.125 : f32[] weak
// CHECK-NEXT: [[C4:%[0-9]+]] = const 0.0625 : f32[] weak
// CHECK-NEXT: [[X:%[0-9]+]] = load x : f32[x.0]
// CHECK:      [[P1:%[0-9]+]] = add {{%[0-9]+}}, {{%[0-9]+}} : f32[x.0] {{.*}}; p line [[@LINE+10]]
// CHECK-NEXT: [[M2:%[0-9]+]] = mul [[P1]], [[X]]
// CHECK-NEXT: [[P2:%[0-9]+]] = add [[M2]], [[C2]] : f32[x.0] {{.*}}; p line [[@LINE+10]]
// CHECK:      [[M3:%[0-9]+]] = mul [[P2]], [[X]]
// CHECK-NEXT: [[P3:%[0-9]+]] = add [[M3]], [[C3]]
// CHECK:      [[M4:%[0-9]+]] = mul [[P3]], [[X]]
// CHECK-NEXT: [[P4:%[0-9]+]] = add [[M4]], [[C4]]
// CHECK-NEXT: store y, [[P4]]
PK_KERNEL void horner(In<float> x, Out<float> y) {
  const float c[5] = {1.0f, 0.5f, 0.25f, 0.125f, 0.0625f};
  auto p = x[_] * c[0] + c[1];
  for (int i = 2; i < 5; ++i)
    p = p * x[_] + c[i];
  y[_] = p;
}

// std::array, static constexpr, size() as the bound; a table at namespace
// scope bounded by std::size; missing elements are zeros. The double
// coefficients are weak: the f32 data stays f32.
// CHECK-LABEL: func @std_array(in x: f32[x.0], out y: f32[y.0]) {
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0]
// CHECK:      [[A:%[0-9]+]] = const 3 : f32[] weak
// CHECK:      [[P1:%[0-9]+]] = mul [[X]], [[A]] : f32[x.0]
// CHECK:      [[M1:%[0-9]+]] = mul [[P1]], [[X]]
// CHECK-NEXT: [[B:%[0-9]+]] = const 2 : f32[] weak
// CHECK-NEXT: [[P2:%[0-9]+]] = add [[M1]], [[B]] : f32[x.0]
// CHECK:      [[M:%[0-9]+]] = mul [[P2]], [[X]]
// CHECK-NEXT: [[Z:%[0-9]+]] = const 0 : f32[] weak
// CHECK-NEXT: [[P3:%[0-9]+]] = add [[M]], [[Z]]
// CHECK:      [[O1:%[0-9]+]] = const 0.5 : f32[] weak
// CHECK-NEXT: [[P4:%[0-9]+]] = add [[P3]], [[O1]]
// CHECK:      [[O2:%[0-9]+]] = const 0.25 : f32[] weak
// CHECK-NEXT: [[P5:%[0-9]+]] = add [[P4]], [[O2]]
// CHECK-NEXT: store y, [[P5]]
PK_KERNEL void std_array(In<float> x, Out<float> y) {
  static constexpr std::array<double, 3> c = {3.0, 2.0};
  auto p = x[_] * c[0];
  for (size_t i = 1; i < c.size(); ++i)
    p = p * x[_] + c[i];
  for (size_t i = 0; i < std::size(kOffsets); ++i)
    p = p + kOffsets[i];
  y[_] = p;
}

// Rows of a rank-2 table, integer elements, and a table passed to a helper
// (by reference and as a by-value std::array).
template <class Row> auto dot3(const Row &w, auto v) {
  return v * w[0] + v * w[1] + v * w[2];
}
int last(std::array<int, 3> r) { return r[2]; }

// CHECK-LABEL: func @rows(in x: i32[x.0], out y: i32[y.0]) {
// CHECK:      [[W4:%[0-9]+]] = const 4 : i32[] weak
// CHECK-NEXT: [[W5:%[0-9]+]] = const 5 : i32[] weak
// CHECK-NEXT: [[W6:%[0-9]+]] = const 6 : i32[] weak
// CHECK:      [[X:%[0-9]+]] = load x : i32[x.0]
// CHECK:      mul [[X]], [[W4]]
// CHECK:      mul [[X]], [[W5]]
// CHECK:      mul [[X]], [[W6]]
// CHECK-NEXT: [[D:%[0-9]+]] = add {{%[0-9]+}}, {{%[0-9]+}}
// CHECK:      [[R:%[0-9]+]] = add [[D]], [[W6]]
// CHECK-NEXT: store y, [[R]]
PK_KERNEL void rows(In<int32_t> x, Out<int32_t> y) {
  constexpr int m[2][3] = {{1, 2, 3}, {4, 5, 6}};
  const std::array<std::array<int, 3>, 2> n = {{{1, 2, 3}, {4, 5, 6}}};
  constexpr int r = 1;
  y[_] = dot3(m[r], x[_]) + last(n[r]);
}
