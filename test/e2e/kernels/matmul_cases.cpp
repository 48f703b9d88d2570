// matmul and transpose beyond the samples: every operand layout (transpose
// is a view), fused epilogues (scale, residual, bias, activation) and
// prologues (elementwise producers of an operand), batch broadcasting both
// ways, an InOut accumulation, float64 and int32.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void mm_nn(In<float, 2> a, In<float, 2> b, Out<float, 2> c) {
  c[_] = matmul(a[_], b[_]);
}
PK_KERNEL void mm_nt(In<float, 2> a, In<float, 2> bt, Out<float, 2> c) {
  c[_] = matmul(a[_], transpose(bt[_]));
}
PK_KERNEL void mm_tn(In<float, 2> at, In<float, 2> b, Out<float, 2> c) {
  c[_] = matmul(transpose(at[_]), b[_]);
}
PK_KERNEL void mm_tt(In<float, 2> at, In<float, 2> bt, Out<float, 2> c) {
  c[_] = matmul(transpose(at[_]), transpose(bt[_]));
}
PK_KERNEL void mm_epilogue(In<float, 2> a, In<float, 2> b, In<float, 2> r,
                           In<float, 1> bias, Out<float, 2> c, float scale) {
  c[_] = maximum(matmul(a[_], b[_]) * scale + bias[_], 0.0f) + r[_];
}
PK_KERNEL void mm_prologue(In<float, 2> a, In<float, 2> b, In<float, 1> g,
                           Out<float, 2> c) {
  c[_] = matmul(a[_] * g[_], abs(b[_]) - 0.5f);
}
PK_KERNEL void mm_two_outputs(In<float, 2> a, In<float, 2> b,
                              Out<float, 2> c, Out<float, 2> d) {
  auto p = matmul(a[_], b[_]);
  c[_] = p;
  d[_] = tanh(p);
}
PK_KERNEL void bmm(In<float, 3> a, In<float, 3> b, Out<float, 3> c) {
  c[_] = matmul(a[_], b[_]);
}
PK_KERNEL void bmm_shared_b(In<float, 3> a, In<float, 2> b, Out<float, 3> c) {
  c[_] = matmul(a[_], b[_]);
}
PK_KERNEL void bmm_shared_a(In<float, 2> a, In<float, 3> b, Out<float, 3> c) {
  c[_] = matmul(a[_], b[_]);
}
PK_KERNEL void bmm_qk(In<float, 3> q, In<float, 3> k, Out<float, 3> s,
                      float scale) {
  s[_] = matmul(q[_], transpose(k[_])) * scale;
}
PK_KERNEL void mm_accumulate(InOut<float, 2> c, In<float, 2> a,
                             In<float, 2> b) {
  c[_] = c[_] + matmul(a[_], b[_]);
}
PK_KERNEL void mm_f64(In<double, 2> a, In<double, 2> b, Out<double, 2> c) {
  c[_] = matmul(a[_], b[_]);
}
PK_KERNEL void mm_i32(In<int32_t, 2> a, In<int32_t, 2> b, Out<int32_t, 2> c) {
  c[_] = matmul(a[_], b[_]);
}
PK_KERNEL void transpose_copy(In<float, 3> x, Out<float, 3> y) {
  y[_] = transpose(x[_]) * 2.0f;
}

// Attention: softmax(q kᵀ · scale + mask) v, fused into one online-softmax
// pass per query row (no [t, s] buffer). Causal through index(), and with
// an additive mask as an input; v's width may differ from the head's.
PK_KERNEL void attention_causal_heads(In<float, 3> q, In<float, 3> k,
                                      In<float, 3> v, Out<float, 3> o,
                                      float scale) {
  auto s = matmul(q[_], transpose(k[_])) * scale;
  s = where(index(s, -1) <= index(s, -2), s, -INFINITY);
  auto e = exp(s - max(s, -1, keepdims));
  o[_] = matmul(e / sum(e, -1, keepdims), v[_]);
}
PK_KERNEL void attention_masked(In<float, 2> q, In<float, 2> k,
                                In<float, 2> v, In<float, 2> bias,
                                Out<float, 2> o) {
  auto s = matmul(q[_] * 0.5f, transpose(k[_])) + bias[_];
  auto e = exp(s - max(s, -1, keepdims));
  o[_] = matmul(e / sum(e, -1, keepdims), v[_]);
}
PK_KERNEL void attention_f64(In<double, 3> q, In<double, 3> k,
                             In<double, 3> v, Out<double, 3> o) {
  auto s = matmul(q[_], transpose(k[_]));
  auto e = exp(s - max(s, -1, keepdims));
  o[_] = matmul(e / sum(e, -1, keepdims), v[_]);
}

// Not a kernel: whether this file was compiled as pk_add_kernels compiles
// generated code, linked with pk's runtime library (lib/Runtime), whose
// interface defines PK_RUNTIME_LIBRARY so that <pk/gemm.h> calls the
// product's compiled instances (e2e GemmRuntimeLibrary.*).
bool matmul_cases_use_runtime_library() {
#ifdef PK_RUNTIME_LIBRARY
  return true;
#else
  return false;
#endif
}
