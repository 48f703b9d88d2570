// Kernels with views pkc compiles ([views]): permute_dims of refs and of
// values, into elementwise, reduction and matmul groups (ViewsTest.cpp, and
// on the CUDA shim ProgramShimTest.cpp).
#include <pk/pk.h>
using namespace pk::lang;

// [T, H, D] -> [H, T, D] (a head split's transpose), scaled.
PK_KERNEL void split_heads(In<float, 3> x, Out<float, 3> y) {
  y[_] = permute_dims(x[_], {1, 0, 2}) * 2.0f;
}
// Rank 4, every axis moved, plus a broadcast add of the permuted bias:
// x [A, B, C, D] -> [D, B, A, C], b [C, A] -> [A, C].
PK_KERNEL void perm4(In<float, 4> x, In<float, 2> b, Out<float, 4> y) {
  y[_] = permute_dims(x[_], {3, 1, -4, 2}) + permute_dims(b[_], {1, 0});
}
// A reduction over a permuted value and a permuted reduction result.
PK_KERNEL void perm_sum(In<float, 3> x, Out<float, 2> s, Out<float, 2> m) {
  s[_] = sum(permute_dims(x[_], {2, 0, 1}), -1);
  m[_] = permute_dims(max(x[_], 0), {1, 0});
}
// Attention scores per head from [T, H, D] q and k: [H, T, T].
PK_KERNEL void head_scores(In<float, 3> q, In<float, 3> k, Out<float, 3> s) {
  auto qh = permute_dims(q[_], {1, 0, 2});
  auto kh = permute_dims(k[_], {1, 2, 0});
  s[_] = matmul(qh, kh);
}
// Merge heads back: [H, T, D] -> [T, H, D], after an elementwise op.
PK_KERNEL void merge_heads(In<float, 3> o, Out<float, 3> y) {
  y[_] = permute_dims(exp(o[_]), {1, 0, 2});
}
// ref.extent(i) is a run-time int64 value in a kernel (language.md §2): as a
// local, in integer arithmetic, converted to float, compared with
// coordinates, stored. A mean written by hand, each row's first half, the
// extents themselves.
PK_KERNEL void extents(In<float, 2> x, Out<float, 2> centred,
                       Out<float, 2> first_half, Out<int64_t, 1> sizes) {
  auto n = x.extent(1);
  centred[_] = x[_] - sum(x[_], -1, keepdims) / cast<float>(n);
  first_half[_] = where(index(x[_], 1) < n / 2, x[_], 0.0f);
  sizes[_] = x.extent(0) * 1000 + n;
}
