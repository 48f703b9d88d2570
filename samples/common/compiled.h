//===- compiled.h - The compiled sample kernels, for tests and benchmarks -===//
//
// pk_add_kernels() links each sample's <name>.pk.cpp: the original kernel
// with its body replaced, same signature. Programs that use several samples
// (test/e2e, bench/) declare them here once; a sample's own main.cpp shows
// the single declaration a user writes.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_COMPILED_H
#define PK_SAMPLES_COMPILED_H

#include <pk/ref.h>

// Elementwise.
void fma(pk::In<float> a, pk::In<float> b, pk::In<float> c, pk::Out<float> o);
void axpby(float alpha, pk::In<float> x, float beta, pk::InOut<float> y);
void gelu(pk::In<float> x, pk::Out<float> y);
void relu_where(pk::In<float> x, pk::Out<float> y);
void adam_step(pk::InOut<float> p, pk::InOut<float> m, pk::InOut<float> v,
               pk::In<float> g, float lr, float beta1, float beta2, float eps,
               float bias1, float bias2);
void broadcast_bias(pk::In<float, 2> x, pk::In<float, 1> b,
                    pk::Out<float, 2> y);

// Reductions.
void rmsnorm(pk::In<float, 2> x, pk::In<float, 1> w, pk::Out<float, 2> y,
             float eps);
void softmax(pk::In<float, 2> x, pk::Out<float, 2> y);
void layernorm(pk::In<float, 2> x, pk::In<float> w, pk::In<float> b,
               pk::Out<float, 2> out, pk::Out<float> mean_out,
               pk::Out<float> rstd_out, float eps);
void logsumexp(pk::In<float, 2> x, pk::Out<float> out);
void causal_softmax(pk::In<float, 2> scores, pk::Out<float, 2> probs);
void column_mean(pk::In<float, 2> x, pk::Out<float> m);
void add_rmsnorm(pk::InOut<float, 2> h, pk::In<float, 2> x, pk::In<float> w,
                 pk::Out<float, 2> y, float eps);
void sum_all(pk::In<float, 2> x, pk::Out<float, 0> total);

// 16-bit storage, float compute.
void rmsnorm_bf16(pk::In<pk::bfloat16, 2> x, pk::In<pk::bfloat16, 1> w,
                  pk::Out<pk::bfloat16, 2> y, float eps);
void softmax_half(pk::In<pk::half, 2> x, pk::Out<pk::half, 2> y);

// Matrix products.
void sgemm(pk::In<float, 2> a, pk::In<float, 2> b, pk::Out<float, 2> c);
void linear_bias_gelu(pk::In<float, 2> x, pk::In<float, 2> w,
                      pk::In<float, 1> b, pk::Out<float, 2> y);
void batched_matmul(pk::In<float, 3> a, pk::In<float, 3> b,
                    pk::Out<float, 3> c);
void batched_matmul_shared(pk::In<float, 3> a, pk::In<float, 2> w,
                           pk::Out<float, 3> c);

// Attention.
void attention_causal(pk::In<float, 3> q, pk::In<float, 3> k,
                      pk::In<float, 3> v, pk::Out<float, 3> o, float scale);

#endif // PK_SAMPLES_COMPILED_H
