// batched_matmul: one matrix product per batch entry, [B, M, K] x [B, K, N] ->
// [B, M, N]; and the same with one [K, N] matrix shared by every batch entry
// (a rank-2 operand broadcasts over the batch, as in NumPy's matmul), e.g. a
// weight applied to a batch of sequences.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void batched_matmul(In<float, 3> a, In<float, 3> b, Out<float, 3> c) {
  c[_] = matmul(a[_], b[_]);
}

PK_KERNEL void batched_matmul_shared(In<float, 3> a, In<float, 2> w,
                                     Out<float, 3> c) {
  c[_] = matmul(a[_], w[_]);
}
