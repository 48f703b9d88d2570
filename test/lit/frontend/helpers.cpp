// Helpers whose definition is visible are inlined: plain functions,
// function templates, `auto` parameters, helpers that take refs and store.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

auto gelu(auto x) {
  return 0.5f * x * (1 + tanh(0.7978845608f * (x + 0.044715f * x * x * x)));
}

template <class T> pk::Array<T> square(const pk::Array<T> &v) { return v * v; }

float twice(float s) { return s * 2; }

void copy_scaled(Out<float> o, In<float> x, float s) { o[_] = x[_] * s; }

// The literals stay f32 (weak scalars), the int 1 becomes f32 too.
// CHECK-LABEL: func @use_gelu(in x: f32[x.0, x.1], out y: f32[y.0, y.1]) {
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0, x.1]
// CHECK:      [[HALF:%[0-9]+]] = const 0.5 : f32[] weak
// CHECK:      [[HX:%[0-9]+]] = mul [[HALF]], [[X]] : f32[x.0, x.1] {{.*}}; line 8
// CHECK:      [[C:%[0-9]+]] = const 0.044715 : f32[] weak
// CHECK:      [[CX:%[0-9]+]] = mul [[C]], [[X]]
// CHECK:      [[CXX:%[0-9]+]] = mul [[CX]], [[X]]
// CHECK:      [[CXXX:%[0-9]+]] = mul [[CXX]], [[X]]
// CHECK:      [[IN:%[0-9]+]] = add [[X]], [[CXXX]]
// CHECK:      [[TH:%[0-9]+]] = tanh {{%[0-9]+}} : f32[x.0, x.1]
// CHECK:      [[ONE:%[0-9]+]] = const 1 : f32[] weak
// CHECK:      [[P:%[0-9]+]] = add [[ONE]], [[TH]]
// CHECK:      [[G:%[0-9]+]] = mul [[HX]], [[P]] : f32[x.0, x.1]
// CHECK:      store y, [[G]]
// CHECK-NEXT: }
PK_KERNEL void use_gelu(In<float, 2> x, Out<float, 2> y) { y[_] = gelu(x[_]); }

// CHECK-LABEL: func @use_helpers(in x: f64[x.0], out y: f64[y.0], out z: f32[z.0], in w: f32[w.0], scalar s: f32) {
// CHECK:      [[X:%[0-9]+]] = load x : f64[x.0]
// CHECK:      [[SQ:%[0-9]+]] = mul [[X]], [[X]] : f64[x.0] {{.*}}; line 11
// CHECK:      [[S:%[0-9]+]] = param s : f32[] weak
// CHECK:      [[TW:%[0-9]+]] = mul [[S]], {{%[0-9]+}} : f32[] weak {{.*}}; line 13
// CHECK:      [[D:%[0-9]+]] = cast [[TW]] : f64[] weak
// CHECK:      [[Y:%[0-9]+]] = add [[SQ]], [[D]] : f64[x.0]
// CHECK:      store y, [[Y]]
// CHECK:      [[W:%[0-9]+]] = load w : f32[w.0]
// CHECK:      [[Z:%[0-9]+]] = mul [[W]], [[S]] : f32[w.0] {{.*}}; line 15
// CHECK:      store z, [[Z]]
// CHECK-NEXT: }
PK_KERNEL void use_helpers(In<double> x, Out<double> y, Out<float> z, In<float> w, float s) {
  y[_] = square(x[_]) + twice(s);
  copy_scaled(z, w, s);
}

// A helper's early return, its own loop and a helper calling a helper.
template <int N> auto poly(auto v) {
  auto acc = v;
  for (int i = 1; i < N; ++i) {
    if (i == 3)
      return acc;
    acc = acc * v;
  }
  return acc;
}
auto cube_plus(auto v) { return poly<10>(v) + v; }

// CHECK-LABEL: func @nested(
// CHECK:      [[X:%[0-9]+]] = load x
// CHECK:      [[X2:%[0-9]+]] = mul [[X]], [[X]] : f32[x.0] {{.*}}; acc line 58
// CHECK:      [[X3:%[0-9]+]] = mul [[X2]], [[X]] : f32[x.0] {{.*}}; acc line 58
// CHECK:      [[R:%[0-9]+]] = add [[X3]], [[X]] : f32[x.0] {{.*}}; line 62
// CHECK:      store o, [[R]]
// CHECK-NEXT: }
PK_KERNEL void nested(In<float> x, Out<float> o) { o[_] = cube_plus(x[_]); }
