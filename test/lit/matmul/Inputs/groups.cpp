#include <pk/pk.h>
using namespace pk::lang;

// Beside a rank-2 matmul (whose group has rank 3: m, n and k), a rank-3
// elementwise store and a reduction of a rank-3 value over its last axis
// run in a group of their own; the matmul stays a gemm.
PK_KERNEL void mm_beside_others(In<float, 2> a, In<float, 2> b,
                                In<float, 3> x, Out<float, 2> c,
                                Out<float, 3> d, Out<float, 2> e) {
  c[_] = matmul(a[_], b[_]);
  d[_] = x[_] * 2.0f;
  e[_] = sum(x[_], -1);
}

// Integer matmuls multiply in int64 (like the sum and the eager header).
PK_KERNEL void mm_int(In<int32_t, 2> a, In<int32_t, 2> b, Out<int32_t, 2> c) {
  c[_] = matmul(a[_], b[_]);
}
