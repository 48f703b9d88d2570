// Kernels among macros, templates, constexpr functions and namespaces. pkc
// rewrites only the kernel bodies; everything else stays byte for byte, and
// the main() at the end (compiled with -DPK_TEST_MAIN) checks the compiled
// kernels' results.
#include <pk/pk.h>
using namespace pk::lang;

#define SQUARE(v) ((v) * (v))
#define SCALED(v, s) ((v) * (s))
#define UNARY_KERNEL(name) PK_KERNEL void name(In<float> x, Out<float> y)
#define PK_N_STEPS 3

template <class T> struct Accumulator { // untouched
  T Total{};
  void add(T V) { Total += V; }
};

template <class T> constexpr T cube(T V) { return V * V * V; } // untouched

constexpr int steps() { return PK_N_STEPS; }

auto gelu_ish(auto v) { return v * sigmoid(1.702f * v); } // inlined helper

namespace nn {
namespace detail {
constexpr float kHalf = 0.5f;
}

// A kernel inside a namespace, with macros in its body.
PK_KERNEL void square_plus(In<float> x, Out<float> y) {
  y[_] = SQUARE(x[_]) + SCALED(x[_], detail::kHalf);
}

// A kernel declared by a macro; its body is written here.
UNARY_KERNEL(cubed) { y[_] = cube(x[_]); }
} // namespace nn

inline namespace v1 {
// A constant loop whose trip count comes from a constexpr function.
PK_KERNEL void repeat(In<float> x, Out<float> y) {
  auto t = x[_];
  for (int i = 0; i < steps(); ++i)
    t = t + 1.0f;
  y[_] = gelu_ish(t) - gelu_ish(t) + t;
}
} // namespace v1

#if PK_N_STEPS > 2
PK_KERNEL void under_if(In<float> x, Out<float> y) { y[_] = x[_] * 2.0f; }
#else
PK_KERNEL void under_if(In<float> x, Out<float> y) { y[_] = x[_] * 4.0f; }
#endif

template <class T> T not_a_kernel_template(T V) { return V + T(1); }

namespace {
PK_KERNEL void file_local(In<float> x, Out<float> y) { y[_] = x[_] - 1.0f; }
} // namespace

#ifdef PK_TEST_MAIN
#include <cstdio>
int main() {
  std::vector<float> X = {1, 2, 3}, Y(3);
  int Bad = 0;
  auto expect = [&](const char *What, std::vector<float> Want) {
    if (Y != Want) {
      std::printf("%s: wrong result\n", What);
      ++Bad;
    }
  };
  nn::square_plus(X, Y);
  expect("square_plus", {1.5f, 5.0f, 10.5f});
  nn::cubed(X, Y);
  expect("cubed", {1, 8, 27});
  repeat(X, Y);
  expect("repeat", {4, 5, 6});
  under_if(X, Y);
  expect("under_if", {2, 4, 6});
  file_local(X, Y);
  expect("file_local", {0, 1, 2});
  Accumulator<int> A;
  A.add(cube(2));
  A.add(not_a_kernel_template(1));
  if (A.Total != 10)
    ++Bad;
  std::printf("%d wrong\n", Bad);
  return Bad;
}
#endif
