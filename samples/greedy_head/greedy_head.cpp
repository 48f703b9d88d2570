// greedy_head: the end of a decoder's forward pass with greedy decoding. The
// last hidden state of each sequence goes through the final RMSNorm and the
// tied classifier (the token embedding table, transposed), and the next
// token is the argmax of the logits. One kernel: pkc keeps the logits in a
// pk-managed buffer (an argmax over a matmul's result needs them all) and
// fuses the argmax's two passes over each row into one loop nest.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void greedy_head(In<float, 2> x, In<float> norm_w,
                           In<float, 2> embedding, Out<int64_t> next,
                           float eps) {
  auto ms = mean(x[_] * x[_], -1, keepdims);        // [B, 1]
  auto h = x[_] * rsqrt(ms + eps) * norm_w[_];      // [B, dim]
  auto logits = matmul(h, transpose(embedding[_])); // [B, vocab]
  next[_] = argmax(logits, -1);                     // [B]
}
