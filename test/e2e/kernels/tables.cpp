// Constant tables (language.md §4): polynomials by Horner's rule over
// coefficient tables (a float C array, a double table on double data, a
// std::array, a static constexpr table at namespace scope bounded by
// std::size), and a rank-2 integer table read by rows in a helper.
#include <pk/pk.h>

#include <array>
#include <iterator>
using namespace pk::lang;

// exp(x) to degree 5 (Taylor), highest coefficient first.
PK_KERNEL void poly_float(In<float> x, Out<float> y) {
  const float c[6] = {1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f, 1.0f, 1.0f};
  auto p = x[_] * c[0] + c[1];
  for (int i = 2; i < 6; ++i)
    p = p * x[_] + c[i];
  y[_] = p;
}

PK_KERNEL void poly_double(In<double> x, Out<double> y) {
  constexpr double c[] = {-1.0 / 5040, 0.0, 1.0 / 120, 0.0, -1.0 / 6, 0.0, 1.0};
  auto p = x[_] * c[0];
  for (int i = 1; i < 7; ++i)
    p = (p + c[i]) * x[_]; // sin(x) to degree 7
  y[_] = p;
}

// Lowest coefficient first, counted down; float data, double coefficients
// (weak scalars: computed in float, as eagerly).
PK_KERNEL void poly_std_array(In<float> x, Out<float> y) {
  static constexpr std::array<double, 4> c = {0.25, -0.5, 0.75, 2.0};
  auto p = x[_] * c[c.size() - 1] + c[c.size() - 2];
  for (int i = int(c.size()) - 3; i >= 0; --i)
    p = p * x[_] + c[i];
  y[_] = p;
}

constexpr float kShift[] = {0.5f, -1.5f, 2.25f};

template <class Row> auto dot3(const Row &w, auto a, auto b, auto c) {
  return a * w[0] + b * w[1] + c * w[2];
}

// Three outputs, each a weighted sum of the inputs with one row of m.
PK_KERNEL void mix_rows(In<int32_t> a, In<int32_t> b, In<int32_t> c,
                        Out<int32_t> o0, Out<int32_t> o1, Out<float> o2) {
  constexpr int m[3][3] = {{1, 2, 3}, {-4, 5, -6}, {7, 0, 9}};
  o0[_] = dot3(m[0], a[_], b[_], c[_]);
  o1[_] = dot3(m[1], a[_], b[_], c[_]);
  auto s = dot3(m[2], a[_], b[_], c[_]) * 0.5f;
  for (size_t i = 0; i < std::size(kShift); ++i)
    s = s + kShift[i];
  o2[_] = s;
}
