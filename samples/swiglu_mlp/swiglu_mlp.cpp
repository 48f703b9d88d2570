// swiglu_mlp: Llama's feed-forward block, y = (silu(x Wg^T) * (x Wu^T)) Wd^T,
// weights in nn.Linear layout ([out, in]). The gate and up products share x:
// pkc runs them as one dual product whose epilogue computes silu(g) * u into
// a pk-managed buffer, the down projection's operand.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void swiglu_mlp(In<float, 2> x, In<float, 2> w_gate,
                          In<float, 2> w_up, In<float, 2> w_down,
                          Out<float, 2> y) {
  auto g = matmul(x[_], transpose(w_gate[_])); // [T, F]
  auto u = matmul(x[_], transpose(w_up[_]));   // [T, F]
  y[_] = matmul(g * sigmoid(g) * u, transpose(w_down[_]));
}
