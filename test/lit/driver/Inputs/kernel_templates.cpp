// Kernel templates: each explicit instantiation is compiled and keeps its
// symbol (kernel-templates.test). The main() at the end (compiled with
// -DPK_TEST_MAIN) calls each instantiation, an explicit specialization and
// an implicit instantiation (which runs the eager body).
#include <pk/pk.h>
using namespace pk::lang;

namespace nn {
// Scales x by a.
template <typename T>
PK_KERNEL void scale(In<T> x, Out<T> y, T a) {
  y[_] = x[_] * a;
}

template void scale<float>(In<float>, Out<float>, float);
template void scale<double>(In<double>, Out<double>, double);

// Its own body: compiled as written.
template <>
PK_KERNEL void scale<int32_t>(In<int32_t> x, Out<int32_t> y, int32_t a) {
  y[_] = x[_] + a;
}
} // namespace nn

// A rank parameter, and an output whose rank is computed from it.
template <class T, int R>
PK_KERNEL void row_sums(In<T, R> x, Out<T, R - 1> y) { y[_] = sum(x[_], -1); }
template void row_sums<float, 2>(In<float, 2>, Out<float, 1>);
template void row_sums(In<double, 3>, Out<double, 2>); // deduced

#ifdef PK_TEST_MAIN
#include <cstdio>
int main() {
  int Bad = 0;
  std::vector<float> X = {1, 2, 3}, Y(3);
  nn::scale<float>(X, Y, 2.0f);
  Bad += Y != std::vector<float>{2, 4, 6};
  std::vector<double> XD = {1, 2, 3}, YD(3);
  nn::scale(pk::In<double>(XD), pk::Out<double>(YD), 0.5);
  Bad += YD != std::vector<double>{0.5, 1, 1.5};
  std::vector<int32_t> XI = {1, 2}, YI(2);
  nn::scale<int32_t>(XI, YI, 10);
  Bad += YI != std::vector<int32_t>{11, 12};
  std::vector<int64_t> XL = {1, 2}, YL(2);
  nn::scale<int64_t>(XL, YL, 3); // implicit: the eager body
  Bad += YL != std::vector<int64_t>{3, 6};
  std::vector<float> M = {1, 2, 3, 4, 5, 6}, S(2);
  row_sums<float, 2>(pk::In<float, 2>(M.data(), {2, 3}), S);
  Bad += S != std::vector<float>{6, 15};
  std::printf("%d wrong\n", Bad);
  return Bad;
}
#endif
