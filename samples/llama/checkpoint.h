//===- checkpoint.h - llama2.c checkpoint files, read and written ---------===//
//
// Checkpoint memory-maps a llama2.c checkpoint read-only and points Weights
// into the mapping (the weights are never copied). It reads the three
// formats of llama2.c's export.py:
//
//   version 0  legacy_export: 7 int32 (dim, hidden_dim, n_layers, n_heads,
//              n_kv_heads, vocab_size, seq_len; a negative vocab_size means
//              an unshared classifier), then fp32 tensors in run.c's order,
//              with the two RoPE tables run.c skips, then wcls if unshared.
//   version 1  version1_export: a 256-byte header (magic "ak42", version,
//              the 7 int32, a shared-classifier byte, zeros), then fp32
//              tensors, norms first.
//   version 2  version2_export: the same header plus an int32 group size,
//              the norms in fp32, then every matrix in Q8_0 (int8 values,
//              then one fp32 scale per group), one block per layer, as
//              runq.c reads it.
//
// pk's extension, for what llama2.c's formats leave implicit (Qwen2's q/k/v
// biases, a RoPE base other than 10000, an epsilon other than 1e-5): in a
// version 1 or 2 header, at byte 64 (inside llama2.c's zero padding), the
// tag "pkx1", uint32 flags (bit 0: q/k/v biases), float rope_theta, float
// norm_eps. With the bias flag, bq [n_layers, dim], bk and bv [n_layers,
// kv_dim] follow the norms, fp32 in both versions. A file without the tag
// is llama2.c's, read with Llama 2's constants; llama2.c's programs do not
// know the extension (they would read a biased file's tensors out of place).
//
// Every size is checked against the header before anything is mapped, so a
// truncated, padded or hostile file is a FileError, never a crash.
//
// writeCheckpoint writes deterministic random weights of any shape in each
// format, for tests and benchmarks (pk-llama-checkpoint is its command line).
//
//===----------------------------------------------------------------------===//
#ifndef PK_SAMPLES_LLAMA_CHECKPOINT_H
#define PK_SAMPLES_LLAMA_CHECKPOINT_H

#include "model.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace llama {

/// A checkpoint or tokenizer file that cannot be used: missing, truncated,
/// of an unknown format, or inconsistent with itself. what() starts with the
/// file's path and says what is wrong.
class FileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// "ak42" as a little-endian uint32: the first 4 bytes of versions 1 and 2.
inline constexpr uint32_t CheckpointMagic = 0x616b3432;
/// The header of versions 1 and 2 is padded with zeros to this many bytes.
inline constexpr int64_t VersionedHeaderBytes = 256;
/// "pkx1" as a little-endian uint32: the tag of pk's header extension.
inline constexpr uint32_t ExtensionMagic = 0x31786b70;
/// The header of version 0: 7 int32.
inline constexpr int64_t LegacyHeaderBytes = 28;

/// A checkpoint file, mapped read-only for as long as the object lives.
/// Movable (the pointers stay valid: the mapping does not move), not
/// copyable.
class Checkpoint {
public:
  /// Opens, checks and maps `Path`. Throws FileError when the file is
  /// missing or unreadable, shorter or longer than its header implies, of an
  /// unknown magic or version, or has sizes that are not positive, overflow,
  /// or break the model's rules (dim divisible by n_heads, n_heads by
  /// n_kv_heads, even head_size; in version 2 a positive group size that
  /// divides every matrix and keeps every scale 4-byte aligned).
  static Checkpoint open(const std::string &Path);

  Checkpoint(Checkpoint &&Other) noexcept;
  Checkpoint &operator=(Checkpoint &&Other) noexcept;
  Checkpoint(const Checkpoint &) = delete;
  Checkpoint &operator=(const Checkpoint &) = delete;
  ~Checkpoint();

  /// 0, 1 or 2 (see the file comment).
  int version() const { return Version; }
  /// Whether the matrices are Q8_0 (version 2) rather than fp32.
  bool isQuantized() const { return Version == 2; }
  const Config &config() const { return Cfg; }
  /// The fp32 weights. Throws FileError for an int8 (version 2) file, which
  /// has none: see quantizedWeights().
  const Weights &weights() const;
  /// The weights of a version-2 file. Throws FileError for the others.
  const QuantizedWeights &quantizedWeights() const;
  const std::string &path() const { return Path; }
  int64_t fileBytes() const { return Bytes; }

private:
  Checkpoint() = default;
  void unmap();

  std::string Path;
  int Version = 0;
  Config Cfg;
  Weights W;
  QuantizedWeights Q;
  const void *Mapping = nullptr;
  int64_t Bytes = 0;
};

/// Why `C` cannot be a llama2.c checkpoint's shape (a non-positive size,
/// dim not divisible by n_heads, n_heads not divisible by n_kv_heads, an odd
/// head_size, a size beyond int32), or "" when it can.
std::string configProblem(const Config &C);

/// The size in bytes of a checkpoint of shape `C` in `Version` (with
/// `GroupSize` for version 2), or -1 when it does not fit in int64.
/// `C` must have no configProblem.
int64_t checkpointBytes(const Config &C, int Version, int64_t GroupSize = 0);

/// The group size a version-2 checkpoint of shape `C` gets when `Requested`
/// is asked for: `Requested` halved until it divides dim and hidden_dim (as
/// export.py backs off for dim; hidden_dim too so that groups never straddle
/// rows, which runq.c's matmul needs). At least 1.
int64_t fitGroupSize(const Config &C, int64_t Requested);

/// The tensors of a checkpoint file: those of Weights, and version 0's
/// RoPE tables ([seq_len, head_size / 2]: cos and sin of
/// pos * rope_theta^(-2i / head_size)), which run.c skips and so do we.
enum class Tensor {
  TokenEmbedding,
  RmsAtt,
  Wq,
  Wk,
  Wv,
  Wo,
  RmsFfn,
  W1,
  W2,
  W3,
  RmsFinal,
  RopeCos,
  RopeSin,
  Wcls,
  Bq, ///< pk's extension, with Config::qkv_bias: [dim] per layer
  Bk, ///< [kv_dim] per layer
  Bv, ///< [kv_dim] per layer
};

/// Whether a checkpoint of `C` needs pk's header extension: q/k/v biases,
/// or a rope_theta or norm_eps other than Llama 2's.
bool hasExtension(const Config &C);

/// Whether `T` has one slice per layer (RmsAtt, Wq..Wo, RmsFfn, W1..W3,
/// Bq..Bv).
bool isPerLayer(Tensor T);

/// The number of values of `T` (of one layer's slice when isPerLayer(T)),
/// or -1 when it does not fit in int64. `C` must have no configProblem.
int64_t tensorValues(const Config &C, Tensor T);

/// Fills `Out` (tensorValues(C, T) values) with the fp32 weights that
/// writeCheckpoint writes for layer `Layer` of `T` (Layer 0 for the tensors
/// without layers; the RoPE tables get their cos and sin). Each (Seed, T,
/// Layer) has its own random stream, so the three versions of one seed hold
/// the same weights in different orders. Matrices are uniform in
/// +-3/sqrt(fan_in), the embedding and wcls in +-0.1: the layers, not the
/// current token's embedding, decide the next token, and greedy decoding
/// wanders over the vocabulary instead of repeating one token. rms_att and
/// rms_ffn are uniform in [0.8, 1.2]; rms_final is that times about
/// 35/sqrt(dim), which puts the logits' standard deviation near 2 at any
/// dim. The q/k/v biases are uniform in +-0.5.
void randomWeights(const Config &C, uint64_t Seed, Tensor T, int64_t Layer,
                   std::span<float> Out);

/// Writes a checkpoint of shape `C` (C.shared_classifier chooses whether
/// wcls is stored; hasExtension(C) writes pk's extension, and the biases
/// with C.qkv_bias, which version 0 cannot hold) holding randomWeights(Seed)
/// in `Version` 0, 1 or 2; for
/// version 2, quantized to Q8_0 in groups of `GroupSize` (which must divide
/// every matrix: see fitGroupSize) as export.py does. The file is written
/// in chunks (never whole in memory) to `Path`.partial and renamed to
/// `Path` when complete. Throws FileError on a bad shape, version or group
/// size, or when writing fails.
void writeCheckpoint(const std::string &Path, const Config &C, int Version,
                     uint64_t Seed, int64_t GroupSize = 64);

} // namespace llama

#endif // PK_SAMPLES_LLAMA_CHECKPOINT_H
