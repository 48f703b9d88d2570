// Kernel templates (language.md §4): each explicit instantiation is a
// compiled kernel with the template's symbol. A scale over float and double,
// a rank parameter (softmax over the last axis of a rank-R array), and a
// polynomial over a constant table of the template's element type.
#include <pk/pk.h>
using namespace pk::lang;

template <typename T> PK_KERNEL void t_scale(In<T> x, Out<T> y, T a) {
  y[_] = x[_] * a;
}
template void t_scale<float>(In<float>, Out<float>, float);
template void t_scale<double>(In<double>, Out<double>, double);

template <typename T, int R> PK_KERNEL void t_softmax(In<T, R> x, Out<T, R> y) {
  auto e = exp(x[_] - max(x[_], -1, keepdims));
  y[_] = e / sum(e, -1, keepdims);
}
template void t_softmax<float, 2>(In<float, 2>, Out<float, 2>);
template void t_softmax<double, 3>(In<double, 3>, Out<double, 3>);

// 1 + x/2 + x^2/4 + x^3/8 by Horner's rule, in T.
template <typename T> PK_KERNEL void t_poly(In<T> x, Out<T> y) {
  constexpr T c[] = {T(0.125), T(0.25), T(0.5), T(1)};
  auto p = x[_] * c[0] + c[1];
  for (int i = 2; i < 4; ++i)
    p = p * x[_] + c[i];
  y[_] = p;
}
template void t_poly<float>(In<float>, Out<float>);
template void t_poly<double>(In<double>, Out<double>);
