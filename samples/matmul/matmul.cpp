// matmul: a single-precision GEMM, c = a b, [M, K] x [K, N] -> [M, N]. The
// kernel is named sgemm, not matmul: `using namespace pk::lang` brings
// pk::matmul, the operation, into scope.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void sgemm(In<float, 2> a, In<float, 2> b, Out<float, 2> c) {
  c[_] = matmul(a[_], b[_]);
}
