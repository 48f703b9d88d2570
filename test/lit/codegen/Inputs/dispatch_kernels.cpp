// Kernels declared in the ways cpu-dispatch.test checks.
#include <pk/pk.h>
using namespace pk::lang;

namespace ns {
PK_KERNEL void in_namespace(In<float> x, Out<float> y) { y[_] = exp(x[_]); }
} // namespace ns

PK_KERNEL static void with_static(In<float> x, Out<float> y) {
  y[_] = x[_] * 2.0f;
}

#define VOID void
PK_KERNEL VOID macro_return_type(In<float> x, Out<float> y) { y[_] = x[_]; }

void calls_before_the_definition(In<float> x, Out<float> y);
PK_KERNEL void declared_first(In<float> x, Out<float> y);
void calls_before_the_definition(In<float> x, Out<float> y) {
  declared_first(x, y);
}
PK_KERNEL void declared_first(In<float> x, Out<float> y) {
  y[_] = x[_] * x[_] + 1.0f;
}

// Keeps with_static referenced (-Werror=unused-function).
void use_static(In<float> x, Out<float> y) { with_static(x, y); }

// C linkage: the template inserted before each is C++ (extern "C++").
extern "C" PK_KERNEL void c_linkage(In<float> x, Out<float> y) {
  y[_] = x[_] + 1.0f;
}
extern "C" {
PK_KERNEL void c_block(In<float> x, Out<float> y) { y[_] = x[_] + 2.0f; }
}

// Another attribute written first: the template goes before it.
[[maybe_unused]] PK_KERNEL void attribute_first(In<float> x, Out<float> y) {
  y[_] = -x[_];
}
