//===- model.cpp - llama::Model: the kernels of llama.cpp, layer by layer -===//
//
// Model owns the KV cache and the activations, checks every argument, and
// runs embed -> layer x n_layers -> head over refs into the weight slabs, in
// the kernels of its weight format: embed/layer/head<float> for fp32,
// <pk::bfloat16> for fp32 weights it rounded to bf16 (layers.cpp and
// heads.cpp, compiled by pkc), and embed<float> (over the dequantized
// table) / layer_q8 / head_q8 for int8 (llama.cpp and heads.cpp, compiled
// too; Execution::Eager runs their eager twins, the tests' bit-exact
// reference of runq's arithmetic). The kernels are reached through one table
// (Kernels): the compiled ones (layers.pk.cpp, heads.pk.cpp, llama.pk.cpp,
// which define the same kernels with the same signatures) replace the eager
// twins by filling it with their addresses.
//
// Device::Cuda runs the same kernels' CUDA versions through their host
// launchers (pk::cuda::<kernel>, declared in the generated .pk.h files; a
// build with PK_LLAMA_CUDA: nvcc's, or the CUDA shim's in the tests): the
// weights are copied to device memory once, the KV cache and the
// activations live there, and forward() copies in the tokens and out the
// logits. The forward functions are the same; only the buffers' addresses
// and the kernel table differ.
//
//===----------------------------------------------------------------------===//

#include "model.h"

#include <pk/pk.h>

#include <stdexcept>
#include <string>
#include <vector>

// PK_LLAMA_CUDA: the CUDA launchers are linked in (CMakeLists.txt).
#ifndef PK_LLAMA_CUDA
#define PK_LLAMA_CUDA 0
#endif

#if PK_LLAMA_CUDA
#include "heads.pk.h"
#include "layers.pk.h"
#include "llama.pk.h"

#include <cuda_runtime.h>
#endif

namespace eager {
#include "heads.cpp"
#include "layers.cpp"
#include "llama.cpp"
} // namespace eager

// The kernels pkc compiles (heads.cpp, layers.cpp and llama.cpp through
// pk_add_kernels), with the signatures of their eager twins.
void dequantize(pk::In<int8_t, 2> q, pk::In<float, 2> scale,
                pk::Out<float, 2> w);
void layer_q8(pk::InOut<float, 2> x, pk::In<float> rms_att,
              pk::In<int8_t, 2> wq, pk::In<float, 2> wq_scale,
              pk::In<int8_t, 2> wk, pk::In<float, 2> wk_scale,
              pk::In<int8_t, 2> wv, pk::In<float, 2> wv_scale, pk::In<float> bq,
              pk::In<float> bk, pk::In<float> bv, pk::In<int8_t, 2> wo,
              pk::In<float, 2> wo_scale, pk::In<float> rms_ffn,
              pk::In<int8_t, 2> w1, pk::In<float, 2> w1_scale,
              pk::In<int8_t, 2> w2, pk::In<float, 2> w2_scale,
              pk::In<int8_t, 2> w3, pk::In<float, 2> w3_scale,
              pk::InOut<float, 3> key_cache, pk::InOut<float, 3> value_cache,
              pk::In<float, 2> rope_cos, pk::In<float, 2> rope_sin, int64_t pos,
              float eps);
void head_q8(pk::In<float, 2> x, pk::In<float> rms_final,
             pk::In<int8_t, 2> wcls, pk::In<float, 2> wcls_scale,
             pk::Out<float> logits, float eps);
template <class W>
void embed(pk::In<int32_t> tokens, pk::In<W, 2> token_embedding,
           pk::Out<float, 2> x);
template <class W>
void layer(pk::InOut<float, 2> x, pk::In<float> rms_att, pk::In<W, 2> wq,
           pk::In<W, 2> wk, pk::In<W, 2> wv, pk::In<float> bq, pk::In<float> bk,
           pk::In<float> bv, pk::In<W, 2> wo, pk::In<float> rms_ffn,
           pk::In<W, 2> w1, pk::In<W, 2> w2, pk::In<W, 2> w3,
           pk::InOut<float, 3> key_cache, pk::InOut<float, 3> value_cache,
           pk::In<float, 2> rope_cos, pk::In<float, 2> rope_sin, int64_t pos,
           float eps);
void rope_tables(pk::Out<float, 2> rope_cos, pk::Out<float, 2> rope_sin,
                 float theta);
template <class W>
void head(pk::In<float, 2> x, pk::In<float> rms_final, pk::In<W, 2> wcls,
          pk::Out<float> logits, float eps);

namespace llama {
namespace {

using pk::In;
using pk::InOut;
using pk::Out;
using BF16 = pk::bfloat16;

/// The kernels of one dense weight type W (float or pk::bfloat16).
template <class W> struct DenseKernels {
  decltype(&eager::embed<W>) embed;
  decltype(&eager::layer<W>) layer;
  decltype(&eager::head<W>) head;
};

/// The kernels Model runs, with llama.cpp's signatures.
struct Kernels {
  DenseKernels<float> f32;
  DenseKernels<BF16> bf16;
  decltype(&eager::dequantize) dequantize;
  decltype(&eager::layer_q8) layer_q8;
  decltype(&eager::head_q8) head_q8;
};

/// The kernels Model runs: every one compiled by pkc (layers.cpp, heads.cpp,
/// llama.cpp); the int8 products run as pk::rt::int8_product.
constexpr Kernels ModelKernels{
    {&::embed<float>, &::layer<float>, &::head<float>},
    {&::embed<BF16>, &::layer<BF16>, &::head<BF16>},
    &::dequantize,
    &::layer_q8,
    &::head_q8};

/// Execution::Eager's int8 kernels: pk.h's NumPy-like semantics, whose sums
/// accumulate in double (the compiled ones sum in float), so their logits
/// are runq's bit for bit with double sums (the tests say so).
constexpr Kernels EagerInt8Kernels{
    {&::embed<float>, &::layer<float>, &::head<float>},
    {&::embed<BF16>, &::layer<BF16>, &::head<BF16>},
    &eager::dequantize,
    &eager::layer_q8,
    &eager::head_q8};

#if PK_LLAMA_CUDA
/// The CUDA launchers behind the same table: each entry forwards its refs
/// (device memory) to pk::cuda::<kernel> on the default stream.
template <class W> DenseKernels<W> cudaDense() {
  return {[](auto... A) { pk::cuda::embed<W>(A...); },
          [](auto... A) { pk::cuda::layer<W>(A...); },
          [](auto... A) { pk::cuda::head<W>(A...); }};
}

const Kernels CudaKernels{cudaDense<float>(), cudaDense<BF16>(),
                          [](auto... A) { pk::cuda::dequantize(A...); },
                          [](auto... A) { pk::cuda::layer_q8(A...); },
                          [](auto... A) { pk::cuda::head_q8(A...); }};

void checkCuda(cudaError_t E, const char *What) {
  if (E != cudaSuccess)
    throw std::runtime_error(std::string("llama::Model: ") + What + ": " +
                             cudaGetErrorString(E));
}

/// Device memory for the model's lifetime.
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory() {
    for (void *P : Blocks)
      cudaFree(P);
  }
  /// N zero-filled Ts.
  template <class T> T *alloc(int64_t N) {
    void *P = nullptr;
    const auto Bytes = static_cast<size_t>(std::max<int64_t>(N, 1)) * sizeof(T);
    checkCuda(cudaMalloc(&P, Bytes), "cudaMalloc");
    Blocks.push_back(P);
    checkCuda(cudaMemset(P, 0, Bytes), "cudaMemset");
    return static_cast<T *>(P);
  }
  /// A device copy of Src[0, N) (null for null).
  template <class T> const T *upload(const T *Src, int64_t N) {
    if (!Src)
      return nullptr;
    T *P = alloc<T>(N);
    checkCuda(cudaMemcpy(P, Src, static_cast<size_t>(N) * sizeof(T),
                         cudaMemcpyHostToDevice),
              "cudaMemcpy to the device");
    return P;
  }

private:
  std::vector<void *> Blocks;
};
#endif

/// Weights with matrices of element type W in llama2.c's layouts (Weights
/// is DenseWeights<float>'s public face); the norms and biases are fp32 in
/// every format, the biases null without Config::qkv_bias.
template <class W> struct DenseWeights {
  const W *token_embedding, *wq, *wk, *wv, *wo, *w1, *w2, *w3, *wcls;
  const float *rms_att, *rms_ffn, *rms_final;
  const float *bq, *bk, *bv;
};

[[noreturn]] void fail(const std::string &Why) {
  throw pk::ShapeError("llama::Model: " + Why);
}

void checkConfig(const Config &C) {
  if (std::string Problem = shapeProblem(C); !Problem.empty())
    fail(Problem);
  if (!(C.norm_eps > 0) || !(C.rope_theta > 0))
    fail("norm_eps and rope_theta must be positive");
  // The caches and activations Model allocates: a header with a huge
  // seq_len must not wrap their sizes around (the weights' sizes are the
  // checkpoint reader's to check against the file).
  int64_t Cache = 0, Rows = 0;
  if (__builtin_mul_overflow(C.n_layers, C.n_kv_heads, &Cache) ||
      __builtin_mul_overflow(Cache, C.seq_len, &Cache) ||
      __builtin_mul_overflow(Cache, C.head_size(), &Cache) ||
      __builtin_mul_overflow(C.seq_len, C.dim, &Rows) ||
      Cache > (int64_t(1) << 40) / int64_t(sizeof(float)))
    fail("the KV cache of n_layers " + std::to_string(C.n_layers) +
         " x n_kv_heads " + std::to_string(C.n_kv_heads) + " x seq_len " +
         std::to_string(C.seq_len) + " x head_size " +
         std::to_string(C.head_size()) + " floats is too large");
}

void checkSet(const char *Name, const void *Ptr) {
  if (!Ptr)
    fail(std::string("weights.") + Name + " is null");
}

/// With qkv_bias the three biases must be set; without, they are not read.
void checkBiases(const Config &C, const float *Bq, const float *Bk,
                 const float *Bv) {
  if (!C.qkv_bias)
    return;
  checkSet("bq", Bq);
  checkSet("bk", Bk);
  checkSet("bv", Bv);
}

void checkWeights(const Config &C, const Weights &W) {
  const std::pair<const char *, const float *> Slabs[] = {
      {"token_embedding", W.token_embedding},
      {"rms_att", W.rms_att},
      {"wq", W.wq},
      {"wk", W.wk},
      {"wv", W.wv},
      {"wo", W.wo},
      {"rms_ffn", W.rms_ffn},
      {"w1", W.w1},
      {"w2", W.w2},
      {"w3", W.w3},
      {"rms_final", W.rms_final},
      {"wcls", C.shared_classifier ? W.token_embedding : W.wcls}};
  for (const auto &[Name, Ptr] : Slabs)
    checkSet(Name, Ptr);
  checkBiases(C, W.bq, W.bk, W.bv);
}

void checkWeights(const Config &C, const QuantizedWeights &Q) {
  const int64_t G = Q.group_size;
  if (G <= 0 || C.dim % G != 0 || C.hidden_dim % G != 0)
    fail("the Q8_0 group size " + std::to_string(G) + " does not divide dim " +
         std::to_string(C.dim) + " and hidden_dim " +
         std::to_string(C.hidden_dim));
  checkSet("rms_att", Q.rms_att);
  checkSet("rms_ffn", Q.rms_ffn);
  checkSet("rms_final", Q.rms_final);
  checkBiases(C, Q.bq, Q.bk, Q.bv);
  auto Tensor = [](const char *Name, const QuantizedTensor &T) {
    checkSet(Name, T.values);
    checkSet(Name, T.scales);
  };
  Tensor("token_embedding", Q.token_embedding);
  Tensor("wcls", C.shared_classifier ? Q.token_embedding : Q.wcls);
  const std::pair<const char *, const std::vector<QuantizedTensor> *> Layers[] =
      {{"wq", &Q.wq}, {"wk", &Q.wk}, {"wv", &Q.wv}, {"wo", &Q.wo},
       {"w1", &Q.w1}, {"w2", &Q.w2}, {"w3", &Q.w3}};
  for (const auto &[Name, Tensors] : Layers) {
    if (static_cast<int64_t>(Tensors->size()) != C.n_layers)
      fail(std::string("weights.") + Name + " has " +
           std::to_string(Tensors->size()) + " layers, not n_layers " +
           std::to_string(C.n_layers));
    for (const QuantizedTensor &T : *Tensors)
      Tensor(Name, T);
  }
}

} // namespace

std::string shapeProblem(const Config &C) {
  const std::pair<const char *, int64_t> Sizes[] = {
      {"dim", C.dim},
      {"hidden_dim", C.hidden_dim},
      {"n_layers", C.n_layers},
      {"n_heads", C.n_heads},
      {"n_kv_heads", C.n_kv_heads},
      {"vocab_size", C.vocab_size},
      {"seq_len", C.seq_len}};
  for (const auto &[Name, Value] : Sizes)
    if (Value <= 0)
      return std::string(Name) + " is " + std::to_string(Value) +
             " (it must be positive)";
  if (C.dim % C.n_heads != 0)
    return "dim " + std::to_string(C.dim) + " is not a multiple of n_heads " +
           std::to_string(C.n_heads);
  if (C.n_heads % C.n_kv_heads != 0)
    return "n_heads " + std::to_string(C.n_heads) +
           " is not a multiple of n_kv_heads " + std::to_string(C.n_kv_heads);
  if (C.head_size() % 2 != 0)
    return "head_size (dim / n_heads) is " + std::to_string(C.head_size()) +
           " (RoPE rotates pairs: it must be even)";
  return "";
}

struct Model::State {
  enum class Format { F32, BF16, Q8 };

  /// Per layer [n_kv_heads, seq_len, head_size] (llama.cpp's layout), the
  /// layers stacked: [n_layers, n_kv_heads, seq_len, head_size].
  std::vector<float> KeyCache, ValueCache;
  std::vector<float> X;      ///< [seq_len, dim]: the residual stream of T rows
  std::vector<float> Logits; ///< [vocab_size]
  /// The RoPE tables [seq_len, head_size / 2] (rope_tables, computed by the
  /// compiled CPU kernel once; Device::Cuda reads device copies).
  std::vector<float> RopeCos, RopeSin;
  Kernels K = ModelKernels;
  Device Dev = Device::Cpu;
  /// Where the kernels read and write: the vectors above (Device::Cpu), or
  /// device memory (Device::Cuda; the vectors then hold the logits only).
  float *XBuf = nullptr, *KeyBuf = nullptr, *ValueBuf = nullptr,
        *LogitsBuf = nullptr, *EmbeddingBuf = nullptr;
  const float *RopeCosBuf = nullptr, *RopeSinBuf = nullptr;
  const float *ZeroBiasBuf = nullptr;
  int32_t *TokensBuf = nullptr; ///< Device::Cuda: [seq_len]
#if PK_LLAMA_CUDA
  DeviceMemory Memory;
#endif

  Format Fmt = Format::F32;
  DenseWeights<float> F32{};      ///< Format::F32: the caller's weights
  DenseWeights<BF16> Bf16{};      ///< Format::BF16: into Bf16Matrices
  std::vector<BF16> Bf16Matrices; ///< every matrix, rounded, one buffer
  QuantizedWeights Q8;            ///< Format::Q8: the caller's weights
  std::vector<float> Embedding;   ///< Format::Q8: [vocab, dim], dequantized
  /// The q/k/v biases of a model without them (Config::qkv_bias false):
  /// dim zeros, every layer's bq, bk and bv.
  std::vector<float> ZeroBias;

  State(const Config &C, Device D) : Dev(D) {
    const int64_t Cache = C.n_layers * C.n_kv_heads * C.seq_len * C.head_size();
    Logits.assign(static_cast<size_t>(C.vocab_size), 0.0f);
    const int64_t Half = C.head_size() / 2;
    RopeCos.assign(static_cast<size_t>(C.seq_len * Half), 0.0f);
    RopeSin.assign(RopeCos.size(), 0.0f);
    ::rope_tables(Out<float, 2>(RopeCos.data(), {C.seq_len, Half}, "rope_cos"),
                  Out<float, 2>(RopeSin.data(), {C.seq_len, Half}, "rope_sin"),
                  C.rope_theta);
    RopeCosBuf = RopeCos.data();
    RopeSinBuf = RopeSin.data();
    if (D == Device::Cuda) {
#if PK_LLAMA_CUDA
      K = CudaKernels;
      RopeCosBuf = Memory.upload(RopeCos.data(), C.seq_len * Half);
      RopeSinBuf = Memory.upload(RopeSin.data(), C.seq_len * Half);
      KeyBuf = Memory.alloc<float>(Cache);
      ValueBuf = Memory.alloc<float>(Cache);
      XBuf = Memory.alloc<float>(C.seq_len * C.dim);
      LogitsBuf = Memory.alloc<float>(C.vocab_size);
      TokensBuf = Memory.alloc<int32_t>(C.seq_len);
      ZeroBiasBuf = Memory.alloc<float>(C.dim);
      return;
#else
      fail("this build has no CUDA kernels (Device::Cuda needs a build "
           "with CUDA: hasCuda())");
#endif
    }
    KeyCache.assign(static_cast<size_t>(Cache), 0.0f);
    ValueCache.assign(static_cast<size_t>(Cache), 0.0f);
    X.assign(static_cast<size_t>(C.seq_len * C.dim), 0.0f);
    ZeroBias.assign(static_cast<size_t>(C.dim), 0.0f);
    KeyBuf = KeyCache.data();
    ValueBuf = ValueCache.data();
    XBuf = X.data();
    LogitsBuf = Logits.data();
    ZeroBiasBuf = ZeroBias.data();
  }

  /// Device::Cuda: copies the fp32 vectors every format has (the norms and
  /// the biases) to the device and points `W` at the copies.
  template <class Slabs>
  void uploadVectors([[maybe_unused]] const Config &C,
                     [[maybe_unused]] Slabs &W) {
#if PK_LLAMA_CUDA
    const int64_t D = C.dim, KV = C.kv_dim(), L = C.n_layers;
    W.rms_att = Memory.upload(W.rms_att, L * D);
    W.rms_ffn = Memory.upload(W.rms_ffn, L * D);
    W.rms_final = Memory.upload(W.rms_final, D);
    W.bq = Memory.upload(W.bq, L * D);
    W.bk = Memory.upload(W.bk, L * KV);
    W.bv = Memory.upload(W.bv, L * KV);
#endif
  }

  /// Device::Cuda: copies the weights' tensors to the device and points
  /// `W` at the copies.
  template <class T>
  void uploadDense([[maybe_unused]] const Config &C,
                   [[maybe_unused]] DenseWeights<T> &W) {
#if PK_LLAMA_CUDA
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim(), L = C.n_layers,
                  V = C.vocab_size;
    const T *Table = W.token_embedding;
    W.token_embedding = Memory.upload(Table, V * D);
    W.wcls = W.wcls == Table ? W.token_embedding : Memory.upload(W.wcls, V * D);
    W.wq = Memory.upload(W.wq, L * D * D);
    W.wk = Memory.upload(W.wk, L * KV * D);
    W.wv = Memory.upload(W.wv, L * KV * D);
    W.wo = Memory.upload(W.wo, L * D * D);
    W.w1 = Memory.upload(W.w1, L * F * D);
    W.w2 = Memory.upload(W.w2, L * D * F);
    W.w3 = Memory.upload(W.w3, L * F * D);
    uploadVectors(C, W);
#endif
  }

  /// Device::Cuda: the same for int8 weights (each layer's tensor apart).
  void uploadQ8([[maybe_unused]] const Config &C) {
#if PK_LLAMA_CUDA
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim(), L = C.n_layers,
                  V = C.vocab_size, G = Q8.group_size;
    auto Tensor = [&](QuantizedTensor &T, int64_t Values) {
      T.values = Memory.upload(T.values, Values);
      T.scales = Memory.upload(T.scales, Values / G);
    };
    const bool Shared = Q8.wcls.values == Q8.token_embedding.values;
    Tensor(Q8.token_embedding, V * D);
    if (Shared)
      Q8.wcls = Q8.token_embedding;
    else
      Tensor(Q8.wcls, V * D);
    for (int64_t I = 0; I < L; ++I) {
      const auto At = static_cast<size_t>(I);
      Tensor(Q8.wq[At], D * D);
      Tensor(Q8.wk[At], KV * D);
      Tensor(Q8.wv[At], KV * D);
      Tensor(Q8.wo[At], D * D);
      Tensor(Q8.w1[At], F * D);
      Tensor(Q8.w2[At], D * F);
      Tensor(Q8.w3[At], F * D);
    }
    uploadVectors(C, Q8);
    EmbeddingBuf = Memory.alloc<float>(V * D);
#endif
  }

  /// The token ids as the kernels read them: `Tokens` itself on the CPU, a
  /// device copy on CUDA.
  const int32_t *tokens(std::span<const int32_t> Tokens) {
    if (Dev == Device::Cpu)
      return Tokens.data();
#if PK_LLAMA_CUDA
    checkCuda(cudaMemcpy(TokensBuf, Tokens.data(),
                         Tokens.size() * sizeof(int32_t),
                         cudaMemcpyHostToDevice),
              "cudaMemcpy of the tokens");
#endif
    return TokensBuf;
  }

  /// Device::Cuda: the logits back into Logits (the launches before it on
  /// the default stream are done when it returns).
  void downloadLogits() {
#if PK_LLAMA_CUDA
    if (Dev == Device::Cuda)
      checkCuda(cudaMemcpy(Logits.data(), LogitsBuf,
                           Logits.size() * sizeof(float),
                           cudaMemcpyDeviceToHost),
                "cudaMemcpy of the logits");
#endif
  }

  /// Layer L's slice [N] of the bias slab B ([n_layers, N]), or zeros when
  /// the model has no biases.
  In<float> bias(const float *B, int64_t L, int64_t N, const char *Name) const {
    return In<float>(B ? B + L * N : ZeroBiasBuf, {N}, Name);
  }

  /// Rounds the matrices of `W` to bf16 into Bf16Matrices and points Bf16
  /// at them (the norms at W's).
  void roundToBf16(const Config &C, const Weights &W) {
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim(), L = C.n_layers,
                  V = C.vocab_size;
    const int64_t Tables = C.shared_classifier ? 1 : 2;
    Bf16Matrices.resize(static_cast<size_t>(
        Tables * V * D + L * (2 * D * D + 2 * KV * D + 3 * F * D)));
    int64_t At = 0;
    auto Round = [&](const float *Src, int64_t N) {
      BF16 *Dst = Bf16Matrices.data() + At;
#pragma omp parallel for
      for (int64_t I = 0; I < N; ++I)
        Dst[I] = BF16(Src[I]); // to nearest, ties to even
      At += N;
      return static_cast<const BF16 *>(Dst);
    };
    Bf16.token_embedding = Round(W.token_embedding, V * D);
    Bf16.wq = Round(W.wq, L * D * D);
    Bf16.wk = Round(W.wk, L * KV * D);
    Bf16.wv = Round(W.wv, L * KV * D);
    Bf16.wo = Round(W.wo, L * D * D);
    Bf16.w1 = Round(W.w1, L * F * D);
    Bf16.w2 = Round(W.w2, L * D * F);
    Bf16.w3 = Round(W.w3, L * F * D);
    Bf16.wcls =
        C.shared_classifier ? Bf16.token_embedding : Round(W.wcls, V * D);
    Bf16.rms_att = W.rms_att;
    Bf16.rms_ffn = W.rms_ffn;
    Bf16.rms_final = W.rms_final;
    Bf16.bq = C.qkv_bias ? W.bq : nullptr;
    Bf16.bk = C.qkv_bias ? W.bk : nullptr;
    Bf16.bv = C.qkv_bias ? W.bv : nullptr;
  }

  /// embed -> layer x n_layers -> head, for dense matrices of type W.
  template <class W>
  void forwardDense(const Config &C, const DenseWeights<W> &Wt,
                    const DenseKernels<W> &DK, std::span<const int32_t> Tokens,
                    int64_t Pos) {
    const int64_t T = static_cast<int64_t>(Tokens.size());
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim();
    DK.embed(In<int32_t>(tokens(Tokens), {T}, "tokens"),
             In<W, 2>(Wt.token_embedding, {C.vocab_size, D}, "token_embedding"),
             Out<float, 2>(XBuf, {T, D}, "x"));
    for (int64_t L = 0; L < C.n_layers; ++L) {
      DK.layer(InOut<float, 2>(XBuf, {T, D}, "x"),
               In<float>(Wt.rms_att + L * D, {D}, "rms_att"),
               In<W, 2>(Wt.wq + L * D * D, {D, D}, "wq"),
               In<W, 2>(Wt.wk + L * KV * D, {KV, D}, "wk"),
               In<W, 2>(Wt.wv + L * KV * D, {KV, D}, "wv"),
               bias(Wt.bq, L, D, "bq"), bias(Wt.bk, L, KV, "bk"),
               bias(Wt.bv, L, KV, "bv"),
               In<W, 2>(Wt.wo + L * D * D, {D, D}, "wo"),
               In<float>(Wt.rms_ffn + L * D, {D}, "rms_ffn"),
               In<W, 2>(Wt.w1 + L * F * D, {F, D}, "w1"),
               In<W, 2>(Wt.w2 + L * D * F, {D, F}, "w2"),
               In<W, 2>(Wt.w3 + L * F * D, {F, D}, "w3"), keyCache(C, L),
               valueCache(C, L), ropeCos(C), ropeSin(C), Pos, C.norm_eps);
    }
    DK.head(In<float, 2>(XBuf, {T, D}, "x"),
            In<float>(Wt.rms_final, {D}, "rms_final"),
            In<W, 2>(Wt.wcls, {C.vocab_size, D}, "wcls"),
            Out<float>(LogitsBuf, {C.vocab_size}, "logits"), C.norm_eps);
    downloadLogits();
  }

  /// embed (of the dequantized table) -> layer_q8 x n_layers -> head_q8.
  void forwardQ8(const Config &C, std::span<const int32_t> Tokens,
                 int64_t Pos) {
    const int64_t T = static_cast<int64_t>(Tokens.size());
    const int64_t D = C.dim, F = C.hidden_dim, KV = C.kv_dim();
    const auto L = [](const std::vector<QuantizedTensor> &Layers, int64_t I) {
      return Layers[static_cast<size_t>(I)];
    };
    K.f32.embed(
        In<int32_t>(tokens(Tokens), {T}, "tokens"),
        In<float, 2>(EmbeddingBuf, {C.vocab_size, D}, "token_embedding"),
        Out<float, 2>(XBuf, {T, D}, "x"));
    for (int64_t I = 0; I < C.n_layers; ++I) {
      const QuantizedTensor Wq = L(Q8.wq, I), Wk = L(Q8.wk, I),
                            Wv = L(Q8.wv, I), Wo = L(Q8.wo, I),
                            W1 = L(Q8.w1, I), W2 = L(Q8.w2, I),
                            W3 = L(Q8.w3, I);
      K.layer_q8(
          InOut<float, 2>(XBuf, {T, D}, "x"),
          In<float>(Q8.rms_att + I * D, {D}, "rms_att"), values(Wq, D, D, "wq"),
          scales(Wq, D, D, "wq_scale"), values(Wk, KV, D, "wk"),
          scales(Wk, KV, D, "wk_scale"), values(Wv, KV, D, "wv"),
          scales(Wv, KV, D, "wv_scale"), bias(Q8.bq, I, D, "bq"),
          bias(Q8.bk, I, KV, "bk"), bias(Q8.bv, I, KV, "bv"),
          values(Wo, D, D, "wo"), scales(Wo, D, D, "wo_scale"),
          In<float>(Q8.rms_ffn + I * D, {D}, "rms_ffn"), values(W1, F, D, "w1"),
          scales(W1, F, D, "w1_scale"), values(W2, D, F, "w2"),
          scales(W2, D, F, "w2_scale"), values(W3, F, D, "w3"),
          scales(W3, F, D, "w3_scale"), keyCache(C, I), valueCache(C, I),
          ropeCos(C), ropeSin(C), Pos, C.norm_eps);
    }
    const QuantizedTensor Wcls =
        C.shared_classifier ? Q8.token_embedding : Q8.wcls;
    K.head_q8(In<float, 2>(XBuf, {T, D}, "x"),
              In<float>(Q8.rms_final, {D}, "rms_final"),
              values(Wcls, C.vocab_size, D, "wcls"),
              scales(Wcls, C.vocab_size, D, "wcls_scale"),
              Out<float>(LogitsBuf, {C.vocab_size}, "logits"), C.norm_eps);
    downloadLogits();
  }

  /// The int8 values of a Q8_0 matrix [Rows, Cols].
  static In<int8_t, 2> values(const QuantizedTensor &T, int64_t Rows,
                              int64_t Cols, const char *Name) {
    return In<int8_t, 2>(T.values, {Rows, Cols}, Name);
  }
  /// Its scales, [Rows, Cols / group_size].
  In<float, 2> scales(const QuantizedTensor &T, int64_t Rows, int64_t Cols,
                      const char *Name) const {
    return In<float, 2>(T.scales, {Rows, Cols / Q8.group_size}, Name);
  }

  In<float, 2> ropeCos(const Config &C) const {
    return In<float, 2>(RopeCosBuf, {C.seq_len, C.head_size() / 2}, "rope_cos");
  }
  In<float, 2> ropeSin(const Config &C) const {
    return In<float, 2>(RopeSinBuf, {C.seq_len, C.head_size() / 2}, "rope_sin");
  }

  InOut<float, 3> keyCache(const Config &C, int64_t L) {
    return cache(KeyBuf, C, L, "key_cache");
  }
  InOut<float, 3> valueCache(const Config &C, int64_t L) {
    return cache(ValueBuf, C, L, "value_cache");
  }
  static InOut<float, 3> cache(float *Cache, const Config &C, int64_t L,
                               const char *Name) {
    const int64_t Hkv = C.n_kv_heads, Hs = C.head_size(), Seq = C.seq_len;
    return InOut<float, 3>(Cache + L * Hkv * Seq * Hs, {Hkv, Seq, Hs}, Name);
  }
};

bool hasCuda() { return PK_LLAMA_CUDA != 0; }

Model::Model(const Config &C, const Weights &W, DType Storage, Device D)
    : Cfg(C) {
  checkConfig(C);
  checkWeights(C, W);
  S = std::make_unique<State>(C, D);
  if (Storage == DType::BF16) {
    S->Fmt = State::Format::BF16;
    S->roundToBf16(C, W);
    if (D == Device::Cuda) {
      S->uploadDense(C, S->Bf16);
      std::vector<BF16>().swap(S->Bf16Matrices); // the device has them
    }
  } else {
    S->Fmt = State::Format::F32;
    S->F32 = {W.token_embedding,
              W.wq,
              W.wk,
              W.wv,
              W.wo,
              W.w1,
              W.w2,
              W.w3,
              C.shared_classifier ? W.token_embedding : W.wcls,
              W.rms_att,
              W.rms_ffn,
              W.rms_final,
              C.qkv_bias ? W.bq : nullptr,
              C.qkv_bias ? W.bk : nullptr,
              C.qkv_bias ? W.bv : nullptr};
    if (D == Device::Cuda)
      S->uploadDense(C, S->F32);
  }
}

Model::Model(const Config &C, const QuantizedWeights &Q, Execution E, Device Dv)
    : Cfg(C) {
  checkConfig(C);
  checkWeights(C, Q);
  if (E == Execution::Eager && Dv == Device::Cuda)
    fail("Execution::Eager runs on the CPU only");
  S = std::make_unique<State>(C, Dv);
  if (E == Execution::Eager)
    S->K = EagerInt8Kernels;
  S->Fmt = State::Format::Q8;
  S->Q8 = Q;
  if (!C.qkv_bias)
    S->Q8.bq = S->Q8.bk = S->Q8.bv = nullptr;
  if (C.shared_classifier)
    S->Q8.wcls = S->Q8.token_embedding;
  const int64_t V = C.vocab_size, D = C.dim;
  if (Dv == Device::Cuda) {
    S->uploadQ8(C);
  } else {
    S->Embedding.resize(static_cast<size_t>(V * D));
    S->EmbeddingBuf = S->Embedding.data();
  }
  S->K.dequantize(
      State::values(S->Q8.token_embedding, V, D, "token_embedding"),
      S->scales(S->Q8.token_embedding, V, D, "token_embedding_scale"),
      Out<float, 2>(S->EmbeddingBuf, {V, D}, "embedding"));
}

Model::~Model() = default;

std::span<const float> Model::forward(std::span<const int32_t> Tokens,
                                      int64_t Pos) {
  const Config &C = Cfg;
  const int64_t T = static_cast<int64_t>(Tokens.size());
  if (T < 1)
    fail("forward needs at least one token");
  if (Pos < 0 || T > C.seq_len || Pos > C.seq_len - T)
    fail("positions [" + std::to_string(Pos) + ", " + std::to_string(Pos) +
         " + " + std::to_string(T) + ") are outside [0, seq_len " +
         std::to_string(C.seq_len) + ")");
  for (int64_t I = 0; I < T; ++I)
    if (Tokens[static_cast<size_t>(I)] < 0 ||
        Tokens[static_cast<size_t>(I)] >= C.vocab_size)
      fail("token " + std::to_string(Tokens[static_cast<size_t>(I)]) + " (at " +
           std::to_string(I) + ") is outside [0, vocab_size " +
           std::to_string(C.vocab_size) + ")");

  switch (S->Fmt) {
  case State::Format::F32:
    S->forwardDense(C, S->F32, S->K.f32, Tokens, Pos);
    break;
  case State::Format::BF16:
    S->forwardDense(C, S->Bf16, S->K.bf16, Tokens, Pos);
    break;
  case State::Format::Q8:
    S->forwardQ8(C, Tokens, Pos);
    break;
  }
  return {S->Logits.data(), S->Logits.size()};
}

} // namespace llama
