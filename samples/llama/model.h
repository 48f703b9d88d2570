//===- model.h - A Llama-family decoder run by pk kernels -----------------===//
//
// The model's shape (Config), its weights as llama2.c lays them out (Weights:
// fp32; QuantizedWeights: int8 Q8_0, version-2 checkpoints; both pointers
// into a memory-mapped checkpoint, never copies), and Model, which owns the
// KV cache and the activations and runs the kernels of llama.cpp: T new
// tokens at positions pos..pos+T-1 per call (prefill is one call over the
// whole prompt, decode one call per token). Model runs fp32 weights as they
// are or rounded to bf16 (DType), and int8 weights as llama2.c's runq does.
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_MODEL_H
#define PK_SAMPLES_LLAMA_MODEL_H

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace llama {

/// llama2.c's Config, plus what its formats leave implicit (Llama 2's
/// RMSNorm epsilon and RoPE base) and what Qwen2 adds (biases on the q/k/v
/// projections; its epsilon and base differ too). pk's checkpoints carry the
/// last three in a header extension (checkpoint.h).
struct Config {
  int64_t dim = 0;        ///< transformer width
  int64_t hidden_dim = 0; ///< SwiGLU width
  int64_t n_layers = 0;
  int64_t n_heads = 0;    ///< query heads
  int64_t n_kv_heads = 0; ///< key/value heads (n_heads for MHA; fewer: GQA)
  int64_t vocab_size = 0;
  int64_t seq_len = 0;           ///< context length: positions 0..seq_len-1
  bool shared_classifier = true; ///< wcls is the token embedding table
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  bool qkv_bias = false; ///< q/k/v projections add a bias (Qwen2)

  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return head_size() * n_kv_heads; }
};

/// fp32 weights in llama2.c's layouts: row-major, matrices as nn.Linear
/// ([out, in]), one slab per kind with the layers stacked on the first axis.
/// RoPE is llama2.c's: pairs (2i, 2i+1) of each head rotated by
/// pos * rope_theta^(-2i / head_size).
struct Weights {
  const float *token_embedding = nullptr; ///< [vocab_size, dim]
  const float *rms_att = nullptr;         ///< [n_layers, dim]
  const float *wq = nullptr;              ///< [n_layers, dim, dim]
  const float *wk = nullptr;              ///< [n_layers, kv_dim, dim]
  const float *wv = nullptr;              ///< [n_layers, kv_dim, dim]
  const float *wo = nullptr;              ///< [n_layers, dim, dim]
  const float *rms_ffn = nullptr;         ///< [n_layers, dim]
  const float *w1 = nullptr;              ///< [n_layers, hidden_dim, dim] gate
  const float *w2 = nullptr;              ///< [n_layers, dim, hidden_dim] down
  const float *w3 = nullptr;              ///< [n_layers, hidden_dim, dim] up
  const float *rms_final = nullptr;       ///< [dim]
  const float *wcls =
      nullptr; ///< [vocab_size, dim] (token_embedding if shared)
  const float *bq = nullptr; ///< [n_layers, dim] (only with qkv_bias)
  const float *bk = nullptr; ///< [n_layers, kv_dim] (only with qkv_bias)
  const float *bv = nullptr; ///< [n_layers, kv_dim] (only with qkv_bias)
};

/// One Q8_0 tensor: value i of the flattened tensor is
/// values[i] * scales[i / group_size]. Groups run over the flattened tensor,
/// so they straddle rows whose length is not a multiple of group_size
/// (runq.c assumes they never do; Model rejects such weights).
struct QuantizedTensor {
  const int8_t *values = nullptr;
  const float *scales = nullptr;
};

/// The weights of a version-2 checkpoint, in the shapes of Weights: the
/// norms and biases stay fp32; the matrices are Q8_0, one QuantizedTensor per
/// layer because the file quantizes (and stores) each layer's matrix on its
/// own.
struct QuantizedWeights {
  int64_t group_size = 0;
  const float *rms_att = nullptr;   ///< [n_layers, dim]
  const float *rms_ffn = nullptr;   ///< [n_layers, dim]
  const float *rms_final = nullptr; ///< [dim]
  QuantizedTensor token_embedding;  ///< [vocab_size, dim]
  std::vector<QuantizedTensor> wq;  ///< n_layers x [dim, dim]
  std::vector<QuantizedTensor> wk;  ///< n_layers x [kv_dim, dim]
  std::vector<QuantizedTensor> wv;  ///< n_layers x [kv_dim, dim]
  std::vector<QuantizedTensor> wo;  ///< n_layers x [dim, dim]
  std::vector<QuantizedTensor> w1;  ///< n_layers x [hidden_dim, dim]
  std::vector<QuantizedTensor> w2;  ///< n_layers x [dim, hidden_dim]
  std::vector<QuantizedTensor> w3;  ///< n_layers x [hidden_dim, dim]
  QuantizedTensor wcls; ///< [vocab_size, dim] (token_embedding if shared)
  const float *bq = nullptr; ///< [n_layers, dim], fp32 (only with qkv_bias)
  const float *bk = nullptr; ///< [n_layers, kv_dim], fp32 (only with qkv_bias)
  const float *bv = nullptr; ///< [n_layers, kv_dim], fp32 (only with qkv_bias)
};

/// How Model stores the matrices of fp32 Weights: as they are (F32, read in
/// place), or rounded to the nearest pk::bfloat16 (ties to even) into
/// buffers of its own at construction (BF16: half the bytes, 8 significant
/// bits). Norm weights, activations and the KV cache stay fp32.
enum class DType { F32, BF16 };

/// Which kernels the int8 model runs: those pkc compiled (the default), or
/// their eager twins (<pk/pk.h>), whose sums accumulate in double: the
/// reference of runq's arithmetic in the tests.
enum class Execution { Compiled, Eager };

/// Where Model runs its kernels: on the CPU (pkc's fused loops), or on a
/// CUDA device (pkc's CUDA kernels through their host launchers; weights,
/// KV cache and activations in device memory). Device::Cuda needs a build
/// with CUDA kernels (hasCuda()); pk-llama's `--cuda`.
enum class Device { Cpu, Cuda };

/// Whether this build has the CUDA kernels Device::Cuda runs (CMake built
/// samples/llama with nvcc, or the tests' CUDA shim).
bool hasCuda();

/// What is wrong with a config's shape ("" when nothing): a size that is
/// not positive, dim not a multiple of n_heads, n_heads not a multiple of
/// n_kv_heads, an odd head_size. Model and the checkpoint reader both use it.
std::string shapeProblem(const Config &C);

/// Runs the decoder. Not thread-safe; the kernels use the threads OpenMP
/// gives them.
class Model {
public:
  /// Checks the config (positive sizes, dim divisible by n_heads, n_heads
  /// divisible by n_kv_heads, even head_size) and allocates the KV cache
  /// for seq_len positions; throws pk::ShapeError otherwise. `W` must
  /// outlive the model; with DType::BF16 only its norm weights are read
  /// after construction; on Device::Cuda none is (the device has copies).
  /// Throws std::runtime_error when device memory cannot be had, and
  /// pk::ShapeError for Device::Cuda in a build without it.
  Model(const Config &C, const Weights &W, DType Storage = DType::F32,
        Device D = Device::Cpu);
  /// The int8 model, computed as llama2.c's runq: each matrix product
  /// quantizes its input to Q8_0 in groups of Q.group_size, multiplies the
  /// int8 values in int32 and scales each group's sum by both groups'
  /// scales; the token embedding table is dequantized to fp32 here, as
  /// runq does at load. Checks what the other constructor checks, and that
  /// group_size divides dim and hidden_dim and every pointer is set. `Q`'s
  /// tensors must outlive the model (on the CPU; Device::Cuda copies them).
  /// Execution::Eager is the CPU's only.
  Model(const Config &C, const QuantizedWeights &Q,
        Execution E = Execution::Compiled, Device D = Device::Cpu);
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  /// Runs `tokens` (T >= 1 of them, each in [0, vocab_size)) at positions
  /// pos..pos+T-1 (pos + T <= seq_len), writing their keys and values into
  /// the cache, and returns the logits of the last one ([vocab_size]), valid
  /// until the next call. Throws pk::ShapeError for a bad token or range,
  /// before touching the cache.
  std::span<const float> forward(std::span<const int32_t> tokens, int64_t pos);

  const Config &config() const { return Cfg; }

private:
  struct State;
  Config Cfg;
  std::unique_ptr<State> S;
};

} // namespace llama

#endif // PK_SAMPLES_LLAMA_MODEL_H
