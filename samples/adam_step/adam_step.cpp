// adam_step: one Adam update of parameters p with moments m and v, three
// InOut refs updated in one fused pass. Reading m[_] after writing it gives
// the new value (SSA), exactly as the eager code does.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void adam_step(InOut<float> p, InOut<float> m, InOut<float> v,
                         In<float> g, float lr, float beta1, float beta2,
                         float eps, float bias1, float bias2) {
  m[_] = beta1 * m[_] + (1.0f - beta1) * g[_];
  v[_] = beta2 * v[_] + (1.0f - beta2) * g[_] * g[_];
  auto m_hat = m[_] / bias1;
  auto v_hat = v[_] / bias2;
  p[_] = p[_] - lr * m_hat / (sqrt(v_hat) + eps);
}
