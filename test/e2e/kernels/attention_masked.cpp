// Attention whose first key is masked for every query, as the fuzzer wrote it
// (seed 5, kernel k7 of a matmul batch): the documented difference between
// the fused attention and eager code (AttentionMaskedTest.cpp).
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void attention_first_key_masked(In<float, 2> q, In<float, 2> k,
                                          In<float, 2> v, Out<float, 2> o) {
  auto s = matmul(q[_], transpose(k[_]));
  s = where(index(s, -1) == 0, -INFINITY, s);
  auto e = exp(s - max(s, -1, keepdims));
  o[_] = matmul(e / sum(e, -1, keepdims), v[_]);
}
