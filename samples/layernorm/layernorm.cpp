// layernorm with its row statistics as outputs: out [T, D], mean and rstd
// [T], all written from one fused group.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void layernorm(In<float, 2> x, In<float> w, In<float> b,
                         Out<float, 2> out, Out<float> mean_out,
                         Out<float> rstd_out, float eps) {
  auto mu = mean(x[_], -1, keepdims);
  auto d = x[_] - mu;
  auto rstd = rsqrt(mean(d * d, -1, keepdims) + eps);
  out[_] = d * rstd * w[_] + b[_];
  mean_out[_] = squeeze(mu, -1);
  rstd_out[_] = squeeze(rstd, -1);
}
