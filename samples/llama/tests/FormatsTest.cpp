//===- FormatsTest.cpp - Checkpoints, tokenizer and sampler of pk-llama ---===//
//
// The checkpoint reader is checked against files this test assembles byte by
// byte in export.py's orders (typed out here again, not taken from the
// library), the writer against the reader, and both against every way a
// file can be broken. The tokenizer runs on small vocabularies written here;
// the sampler's generator and picks are pinned to numbers run.c produced.
// Nothing here reads llama2.c's own files.
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"
#include "sampler.h"
#include "tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using llama::Checkpoint;
using llama::Config;
using llama::FileError;
using llama::Tensor;
using llama::Tokenizer;

namespace fs = std::filesystem;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// A fresh directory per test, removed afterwards.
class FormatsTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *Info = ::testing::UnitTest::GetInstance()->current_test_info();
    Dir = fs::temp_directory_path() /
          ("pk-llama-formats-" + std::to_string(::getpid()) + "-" +
           Info->test_suite_name() + "-" + Info->name());
    fs::remove_all(Dir);
    fs::create_directories(Dir);
  }
  void TearDown() override { fs::remove_all(Dir); }

  std::string path(const std::string &Name) const { return Dir / Name; }

  fs::path Dir;
};

void writeFile(const std::string &Path, const std::string &Bytes) {
  // A new file each time: ext4 flushes a file rewritten through truncation
  // (auto_da_alloc), which makes the loops below seconds slower.
  fs::remove(Path);
  std::ofstream(Path, std::ios::binary)
      .write(Bytes.data(), static_cast<std::streamsize>(Bytes.size()));
}

std::string readFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  return {std::istreambuf_iterator<char>(In), std::istreambuf_iterator<char>()};
}

/// Little-endian bytes as struct.pack writes them.
struct Bytes {
  std::string S;
  void i32(int32_t V) { S.append(reinterpret_cast<const char *>(&V), 4); }
  void u32(uint32_t V) { S.append(reinterpret_cast<const char *>(&V), 4); }
  void f32(float V) { S.append(reinterpret_cast<const char *>(&V), 4); }
  void u8(uint8_t V) { S.push_back(static_cast<char>(V)); }
  void i8(int8_t V) { S.push_back(static_cast<char>(V)); }
  void padTo(size_t N) { S.resize(std::max(S.size(), N), '\0'); }
};

/// The message of the FileError that `F` throws, or "(no FileError)".
template <class F> std::string fileErrorOf(F &&Body) {
  try {
    Body();
  } catch (const FileError &E) {
    return E.what();
  }
  return "(no FileError)";
}

::testing::AssertionResult contains(const std::string &Text,
                                    const std::string &Part) {
  if (Text.find(Part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "'" << Text << "' does not contain '" << Part << "'";
}

std::string openError(const std::string &Path) {
  return fileErrorOf([&] { Checkpoint::open(Path); });
}

//===----------------------------------------------------------------------===//
// Checkpoints assembled by hand, in export.py's orders
//===----------------------------------------------------------------------===//

/// GQA (2 query heads per kv head), head_size 2, every size different.
Config smallConfig(bool Shared) {
  Config C;
  C.dim = 8;
  C.hidden_dim = 12;
  C.n_layers = 2;
  C.n_heads = 4;
  C.n_kv_heads = 2;
  C.vocab_size = 10;
  C.seq_len = 6;
  C.shared_classifier = Shared;
  return C;
}

/// export.py's tensors, each with a tag that marks its values.
enum Tag {
  TokEmbeddings = 1, // model.tok_embeddings
  AttentionNorm,     // layer.attention_norm
  Wq,
  Wk,
  Wv,
  Wo,
  FfnNorm, // layer.ffn_norm
  W1,
  W2,
  W3,
  Norm,     // model.norm
  FreqsCos, // model.freqs_cos[:max_seq_len] (version 0 only)
  FreqsSin,
  Output, // model.output (unshared only)
  BiasQ,  // pk's extension with the bias flag: q_proj.bias (Qwen2)
  BiasK,
  BiasV,
};

/// Values of one layer of a tensor (of the whole tensor if it has none).
int64_t tagValues(const Config &C, Tag T) {
  switch (T) {
  case TokEmbeddings:
  case Output:
    return C.vocab_size * C.dim;
  case AttentionNorm:
  case FfnNorm:
  case Norm:
  case BiasQ:
    return C.dim;
  case BiasK:
  case BiasV:
    return C.kv_dim();
  case Wq:
  case Wo:
    return C.dim * C.dim;
  case Wk:
  case Wv:
    return C.kv_dim() * C.dim;
  case W1:
  case W2:
  case W3:
    return C.hidden_dim * C.dim;
  case FreqsCos:
  case FreqsSin:
    return C.seq_len * C.head_size() / 2;
  }
  return 0;
}

bool tagPerLayer(Tag T) {
  return T != TokEmbeddings && T != Output && T != Norm && T != FreqsCos &&
         T != FreqsSin;
}

/// Value I of the flattened tensor `T` (all layers): exact in fp32.
float marker(Tag T, int64_t I) {
  return static_cast<float>(T * 100000 + I % 99991);
}

void appendFp32(Bytes &B, const Config &C, Tag T) {
  const int64_t N = tagValues(C, T) * (tagPerLayer(T) ? C.n_layers : 1);
  for (int64_t I = 0; I < N; ++I)
    B.f32(marker(T, I));
}

int8_t quantMarker(Tag T, int64_t Layer, int64_t I) {
  return static_cast<int8_t>((T * 31 + Layer * 7 + I) % 251 - 125);
}

float scaleMarker(Tag T, int64_t Layer, int64_t Group) {
  return static_cast<float>(T) + static_cast<float>(Layer) * 0.25f +
         static_cast<float>(Group) * 0.0078125f;
}

void appendQ8(Bytes &B, const Config &C, Tag T, int64_t GroupSize) {
  const int64_t Layers = tagPerLayer(T) ? C.n_layers : 1, N = tagValues(C, T);
  for (int64_t L = 0; L < Layers; ++L) {
    for (int64_t I = 0; I < N; ++I)
      B.i8(quantMarker(T, L, I));
    for (int64_t G = 0; G < N / GroupSize; ++G)
      B.f32(scaleMarker(T, L, G));
  }
}

void appendParams(Bytes &B, const Config &C, int64_t Vocab) {
  for (int64_t V : {C.dim, C.hidden_dim, C.n_layers, C.n_heads, C.n_kv_heads,
                    Vocab, C.seq_len})
    B.i32(static_cast<int32_t>(V));
}

/// export.py's legacy_export.
std::string legacyFile(const Config &C) {
  Bytes B;
  appendParams(B, C, C.shared_classifier ? C.vocab_size : -C.vocab_size);
  for (Tag T : {TokEmbeddings, AttentionNorm, Wq, Wk, Wv, Wo, FfnNorm, W1, W2,
                W3, Norm, FreqsCos, FreqsSin})
    appendFp32(B, C, T);
  if (!C.shared_classifier)
    appendFp32(B, C, Output);
  return B.S;
}

/// export.py's version1_export.
std::string version1File(const Config &C) {
  Bytes B;
  B.u32(0x616b3432);
  B.i32(1);
  appendParams(B, C, C.vocab_size);
  B.u8(C.shared_classifier ? 1 : 0);
  B.padTo(256);
  for (Tag T : {AttentionNorm, FfnNorm, Norm, TokEmbeddings, Wq, Wk, Wv, Wo, W1,
                W2, W3})
    appendFp32(B, C, T);
  if (!C.shared_classifier)
    appendFp32(B, C, Output);
  return B.S;
}

/// export.py's version2_export.
std::string version2File(const Config &C, int32_t GroupSize) {
  Bytes B;
  B.u32(0x616b3432);
  B.i32(2);
  appendParams(B, C, C.vocab_size);
  B.u8(C.shared_classifier ? 1 : 0);
  B.i32(GroupSize);
  B.padTo(256);
  for (Tag T : {AttentionNorm, FfnNorm, Norm})
    appendFp32(B, C, T);
  for (Tag T : {TokEmbeddings, Wq, Wk, Wv, Wo, W1, W2, W3})
    appendQ8(B, C, T, GroupSize);
  if (!C.shared_classifier)
    appendQ8(B, C, Output, GroupSize);
  return B.S;
}

/// pk's header extension at byte 64 of a version 1 or 2 header `B` (written
/// up to its 37 or 41 bytes): the tag "pkx1", the flags, rope_theta and
/// norm_eps, then zeros to 256 bytes.
void appendExtension(Bytes &B, uint32_t Flags, float Theta, float Eps) {
  B.padTo(64);
  B.S.append("pkx1");
  B.u32(Flags);
  B.f32(Theta);
  B.f32(Eps);
  B.padTo(256);
}

/// A version 1 or 2 file with pk's extension (bias flag from C.qkv_bias):
/// the norms, then the biases, then the matrices of that version.
std::string extendedFile(const Config &C, int Version, int32_t GroupSize) {
  Bytes B;
  B.u32(0x616b3432);
  B.i32(Version);
  appendParams(B, C, C.vocab_size);
  B.u8(C.shared_classifier ? 1 : 0);
  if (Version == 2)
    B.i32(GroupSize);
  appendExtension(B, C.qkv_bias ? 1 : 0, C.rope_theta, C.norm_eps);
  for (Tag T : {AttentionNorm, FfnNorm, Norm})
    appendFp32(B, C, T);
  if (C.qkv_bias)
    for (Tag T : {BiasQ, BiasK, BiasV})
      appendFp32(B, C, T);
  for (Tag T : {TokEmbeddings, Wq, Wk, Wv, Wo, W1, W2, W3})
    Version == 2 ? appendQ8(B, C, T, GroupSize) : appendFp32(B, C, T);
  if (!C.shared_classifier)
    Version == 2 ? appendQ8(B, C, Output, GroupSize) : appendFp32(B, C, Output);
  return B.S;
}

/// Checks that `P` holds tensor `T` (all layers) of a hand-made fp32 file.
void expectMarkers(const float *P, const Config &C, Tag T, const char *Name) {
  ASSERT_NE(P, nullptr) << Name;
  const int64_t N = tagValues(C, T) * (tagPerLayer(T) ? C.n_layers : 1);
  for (int64_t I = 0; I < N; ++I)
    ASSERT_EQ(P[I], marker(T, I)) << Name << " value " << I;
}

void expectFp32Weights(const Checkpoint &Ckpt, const Config &C) {
  const llama::Weights &W = Ckpt.weights();
  expectMarkers(W.token_embedding, C, TokEmbeddings, "token_embedding");
  expectMarkers(W.rms_att, C, AttentionNorm, "rms_att");
  expectMarkers(W.wq, C, Wq, "wq");
  expectMarkers(W.wk, C, Wk, "wk");
  expectMarkers(W.wv, C, Wv, "wv");
  expectMarkers(W.wo, C, Wo, "wo");
  expectMarkers(W.rms_ffn, C, FfnNorm, "rms_ffn");
  expectMarkers(W.w1, C, W1, "w1");
  expectMarkers(W.w2, C, W2, "w2");
  expectMarkers(W.w3, C, W3, "w3");
  expectMarkers(W.rms_final, C, Norm, "rms_final");
  if (C.shared_classifier)
    EXPECT_EQ(W.wcls, W.token_embedding);
  else
    expectMarkers(W.wcls, C, Output, "wcls");
}

void expectConfig(const Config &Got, const Config &Want) {
  EXPECT_EQ(Got.dim, Want.dim);
  EXPECT_EQ(Got.hidden_dim, Want.hidden_dim);
  EXPECT_EQ(Got.n_layers, Want.n_layers);
  EXPECT_EQ(Got.n_heads, Want.n_heads);
  EXPECT_EQ(Got.n_kv_heads, Want.n_kv_heads);
  EXPECT_EQ(Got.vocab_size, Want.vocab_size);
  EXPECT_EQ(Got.seq_len, Want.seq_len);
  EXPECT_EQ(Got.shared_classifier, Want.shared_classifier);
  EXPECT_EQ(Got.qkv_bias, Want.qkv_bias);
  EXPECT_EQ(Got.rope_theta, Want.rope_theta);
  EXPECT_EQ(Got.norm_eps, Want.norm_eps);
}

TEST_F(FormatsTest, ReadsVersion0InRunCOrder) {
  for (bool Shared : {true, false}) {
    const Config C = smallConfig(Shared);
    writeFile(path("v0.bin"), legacyFile(C));
    const Checkpoint Ckpt = Checkpoint::open(path("v0.bin"));
    EXPECT_EQ(Ckpt.version(), 0);
    EXPECT_FALSE(Ckpt.isQuantized());
    expectConfig(Ckpt.config(), C);
    // Unshared: wcls comes after the two RoPE tables run.c skips.
    expectFp32Weights(Ckpt, C);
  }
}

TEST_F(FormatsTest, ReadsVersion1InExportOrder) {
  for (bool Shared : {true, false}) {
    const Config C = smallConfig(Shared);
    writeFile(path("v1.bin"), version1File(C));
    const Checkpoint Ckpt = Checkpoint::open(path("v1.bin"));
    EXPECT_EQ(Ckpt.version(), 1);
    expectConfig(Ckpt.config(), C);
    expectFp32Weights(Ckpt, C);
    EXPECT_TRUE(
        contains(fileErrorOf([&] { (void)Ckpt.quantizedWeights(); }), "fp32"));
  }
}

void expectQuantized(const llama::QuantizedTensor &Q, const Config &C, Tag T,
                     int64_t Layer, int64_t GroupSize, const char *Name) {
  ASSERT_NE(Q.values, nullptr) << Name;
  ASSERT_NE(Q.scales, nullptr) << Name;
  const int64_t N = tagValues(C, T);
  for (int64_t I = 0; I < N; ++I)
    ASSERT_EQ(Q.values[I], quantMarker(T, Layer, I))
        << Name << " layer " << Layer << " value " << I;
  for (int64_t G = 0; G < N / GroupSize; ++G)
    ASSERT_EQ(Q.scales[G], scaleMarker(T, Layer, G))
        << Name << " layer " << Layer << " scale " << G;
}

TEST_F(FormatsTest, ReadsVersion2AsRunqDoes) {
  for (bool Shared : {true, false}) {
    const Config C = smallConfig(Shared);
    writeFile(path("v2.bin"), version2File(C, 4));
    const Checkpoint Ckpt = Checkpoint::open(path("v2.bin"));
    EXPECT_EQ(Ckpt.version(), 2);
    EXPECT_TRUE(Ckpt.isQuantized());
    expectConfig(Ckpt.config(), C);
    EXPECT_TRUE(contains(fileErrorOf([&] { (void)Ckpt.weights(); }),
                         "int8 (version 2)"));
    const llama::QuantizedWeights &Q = Ckpt.quantizedWeights();
    EXPECT_EQ(Q.group_size, 4);
    expectMarkers(Q.rms_att, C, AttentionNorm, "rms_att");
    expectMarkers(Q.rms_ffn, C, FfnNorm, "rms_ffn");
    expectMarkers(Q.rms_final, C, Norm, "rms_final");
    expectQuantized(Q.token_embedding, C, TokEmbeddings, 0, 4, "embedding");
    const std::pair<const std::vector<llama::QuantizedTensor> *, Tag>
        Matrices[] = {{&Q.wq, Wq}, {&Q.wk, Wk}, {&Q.wv, Wv}, {&Q.wo, Wo},
                      {&Q.w1, W1}, {&Q.w2, W2}, {&Q.w3, W3}};
    for (const auto &[Layers, T] : Matrices) {
      ASSERT_EQ(static_cast<int64_t>(Layers->size()), C.n_layers);
      for (int64_t L = 0; L < C.n_layers; ++L)
        expectQuantized((*Layers)[static_cast<size_t>(L)], C, T, L, 4,
                        "matrix");
    }
    if (Shared)
      EXPECT_EQ(Q.wcls.values, Q.token_embedding.values);
    else
      expectQuantized(Q.wcls, C, Output, 0, 4, "wcls");
  }
}

TEST_F(FormatsTest, CheckpointBytesAgreesWithExportOrder) {
  for (bool Shared : {true, false}) {
    const Config C = smallConfig(Shared);
    EXPECT_EQ(llama::checkpointBytes(C, 0),
              static_cast<int64_t>(legacyFile(C).size()));
    EXPECT_EQ(llama::checkpointBytes(C, 1),
              static_cast<int64_t>(version1File(C).size()));
    EXPECT_EQ(llama::checkpointBytes(C, 2, 4),
              static_cast<int64_t>(version2File(C, 4).size()));
  }
  Config Huge = smallConfig(true);
  Huge.dim = Huge.hidden_dim = Huge.n_layers = INT32_MAX - 1; // even
  Huge.n_heads = Huge.n_kv_heads = 1;
  EXPECT_EQ(llama::checkpointBytes(Huge, 1), -1);
}

TEST_F(FormatsTest, MovedCheckpointKeepsItsMapping) {
  const Config C = smallConfig(false);
  writeFile(path("v1.bin"), version1File(C));
  Checkpoint A = Checkpoint::open(path("v1.bin"));
  const float *Wq = A.weights().wq;
  Checkpoint B = std::move(A);
  EXPECT_EQ(B.weights().wq, Wq);
  EXPECT_EQ(B.path(), path("v1.bin"));
  expectFp32Weights(B, C);
  Checkpoint D = Checkpoint::open(path("v1.bin"));
  D = std::move(B); // unmaps D's own mapping
  expectFp32Weights(D, C);
}

//===----------------------------------------------------------------------===//
// Broken checkpoints
//===----------------------------------------------------------------------===//

/// `File` with its int32 at byte `At` replaced by `V`.
std::string withInt32(std::string File, size_t At, int32_t V) {
  std::memcpy(File.data() + At, &V, 4);
  return File;
}

TEST_F(FormatsTest, RejectsMissingAndNonRegularFiles) {
  EXPECT_TRUE(contains(openError(path("missing.bin")), "missing.bin"));
  EXPECT_TRUE(contains(openError(path("missing.bin")), "cannot open"));
  EXPECT_TRUE(contains(openError(Dir.string()), "not a regular file"));
}

TEST_F(FormatsTest, RejectsTruncatedCheckpoints) {
  const Config C = smallConfig(false);
  const std::string Files[] = {legacyFile(C), version1File(C),
                               version2File(C, 4)};
  for (const std::string &File : Files) {
    // Every length through the header, then every 13th short of the whole.
    for (size_t N = 0; N < File.size(); N += N < 300 ? 1 : 13) {
      writeFile(path("cut.bin"), File.substr(0, N));
      const std::string Error = openError(path("cut.bin"));
      ASSERT_TRUE(contains(Error, "cut.bin: truncated")) << N;
    }
  }
  writeFile(path("cut.bin"), Files[1].substr(0, Files[1].size() - 1));
  EXPECT_EQ(openError(path("cut.bin")),
            path("cut.bin") + ": truncated: the header implies " +
                std::to_string(Files[1].size()) + " bytes, the file has " +
                std::to_string(Files[1].size() - 1));
}

TEST_F(FormatsTest, RejectsTrailingBytes) {
  const Config C = smallConfig(true);
  for (const std::string &File :
       {legacyFile(C), version1File(C), version2File(C, 4)}) {
    writeFile(path("long.bin"), File + std::string(4, '\0'));
    EXPECT_EQ(openError(path("long.bin")),
              path("long.bin") + ": 4 trailing bytes: the header implies " +
                  std::to_string(File.size()) + " bytes, the file has " +
                  std::to_string(File.size() + 4));
  }
}

TEST_F(FormatsTest, RejectsUnknownVersions) {
  const std::string V1 = version1File(smallConfig(true));
  for (int32_t Version : {0, 3, 9, -1}) {
    writeFile(path("v.bin"), withInt32(V1, 4, Version));
    const std::string Error = openError(path("v.bin"));
    EXPECT_TRUE(contains(Error, "unsupported checkpoint version " +
                                    std::to_string(Version)));
  }
  // A wrong magic makes it a version 0 file, whose header then fails.
  writeFile(path("magic.bin"), withInt32(V1, 0, 0x616b3433));
  EXPECT_TRUE(contains(openError(path("magic.bin")), "\"ak42\""));
}

TEST_F(FormatsTest, RejectsBadShapes) {
  const std::string V0 = legacyFile(smallConfig(true));
  const std::string V1 = version1File(smallConfig(true));
  struct Case {
    size_t Field; // index among the 7 int32 params
    int32_t Value;
    const char *Why;
  };
  const Case Cases[] = {
      {0, 0, "dim is 0 (it must be positive)"},
      {1, -5, "hidden_dim is -5"},
      {2, 0, "n_layers is 0"},
      {3, 0, "n_heads is 0"},
      {4, -2, "n_kv_heads is -2"},
      {6, 0, "seq_len is 0"},
      {3, 3, "dim 8 is not a multiple of n_heads 3"},
      {4, 3, "n_heads 4 is not a multiple of n_kv_heads 3"},
      {3, 8, "head_size (dim / n_heads) is 1"},
  };
  for (const Case &K : Cases) {
    writeFile(path("v0.bin"), withInt32(V0, 4 * K.Field, K.Value));
    EXPECT_TRUE(contains(openError(path("v0.bin")), K.Why)) << K.Why;
    writeFile(path("v1.bin"), withInt32(V1, 8 + 4 * K.Field, K.Value));
    EXPECT_TRUE(contains(openError(path("v1.bin")), K.Why)) << K.Why;
  }
  // vocab_size: 0 in both, negative only in version 0 (its unshared flag).
  writeFile(path("v0.bin"), withInt32(V0, 20, 0));
  EXPECT_TRUE(contains(openError(path("v0.bin")), "vocab_size is 0"));
  writeFile(path("v1.bin"), withInt32(V1, 28, -10));
  EXPECT_TRUE(contains(openError(path("v1.bin")), "vocab_size is -10"));
  writeFile(path("v0.bin"), withInt32(V0, 20, INT32_MIN));
  EXPECT_TRUE(contains(openError(path("v0.bin")), "vocab_size is 2147483648"));
}

TEST_F(FormatsTest, RejectsSizesThatOverflow) {
  std::string V0 = legacyFile(smallConfig(true));
  for (size_t Field : {0, 1, 2, 5, 6}) // dim, hidden_dim, n_layers, vocab, seq
    V0 = withInt32(V0, 4 * Field, INT32_MAX - 1);
  V0 = withInt32(V0, 12, 1); // n_heads
  V0 = withInt32(V0, 16, 1); // n_kv_heads
  writeFile(path("huge.bin"), V0);
  EXPECT_TRUE(contains(openError(path("huge.bin")), "overflow"));
}

TEST_F(FormatsTest, RejectsBadVersionedHeaders) {
  const Config C = smallConfig(true);
  std::string V1 = version1File(C);
  V1[36] = 2;
  writeFile(path("flag.bin"), V1);
  EXPECT_TRUE(contains(openError(path("flag.bin")),
                       "shared-classifier flag (byte 36) is 2"));
  V1 = version1File(C);
  V1[200] = 1;
  writeFile(path("pad.bin"), V1);
  EXPECT_TRUE(contains(openError(path("pad.bin")), "header byte 200"));

  const std::string V2 = version2File(C, 4);
  writeFile(path("g0.bin"), withInt32(V2, 37, 0)); // unaligned, as packed
  EXPECT_TRUE(contains(openError(path("g0.bin")), "the group size is 0"));
  writeFile(path("g3.bin"), withInt32(V2, 37, 3));
  EXPECT_TRUE(
      contains(openError(path("g3.bin")), "the group size 3 does not divide"));
  // Group size 2 and a 3 x 6 embedding: its 18 int8 values put its scales
  // 2 bytes off a float's alignment.
  Config Misaligned = C;
  Misaligned.dim = 6;
  Misaligned.n_heads = 3;
  Misaligned.n_kv_heads = 3;
  Misaligned.hidden_dim = 4;
  Misaligned.vocab_size = 3;
  writeFile(path("mis.bin"), version2File(Misaligned, 2));
  EXPECT_TRUE(contains(openError(path("mis.bin")), "not 4-byte aligned"));
}

/// smallConfig as Qwen2 has it: q/k/v biases, its RoPE base and epsilon.
Config qwen2Config(bool Shared) {
  Config C = smallConfig(Shared);
  C.qkv_bias = true;
  C.rope_theta = 1e6f;
  C.norm_eps = 1e-6f;
  return C;
}

TEST_F(FormatsTest, ReadsPksExtension) {
  for (bool Shared : {true, false})
    for (bool Bias : {true, false}) {
      Config C = qwen2Config(Shared);
      C.qkv_bias = Bias;
      C.rope_theta = Bias ? 1e6f : 5e5f;
      writeFile(path("v1.bin"), extendedFile(C, 1, 0));
      const Checkpoint V1 = Checkpoint::open(path("v1.bin"));
      expectConfig(V1.config(), C);
      expectFp32Weights(V1, C); // the biases did not shift the matrices
      const llama::Weights &W = V1.weights();
      if (Bias) {
        expectMarkers(W.bq, C, BiasQ, "bq");
        expectMarkers(W.bk, C, BiasK, "bk");
        expectMarkers(W.bv, C, BiasV, "bv");
      } else {
        EXPECT_EQ(W.bq, nullptr);
      }

      writeFile(path("v2.bin"), extendedFile(C, 2, 4));
      const Checkpoint V2 = Checkpoint::open(path("v2.bin"));
      expectConfig(V2.config(), C);
      const llama::QuantizedWeights &Q = V2.quantizedWeights();
      expectMarkers(Q.rms_final, C, Norm, "rms_final");
      if (Bias) {
        expectMarkers(Q.bq, C, BiasQ, "bq");
        expectMarkers(Q.bv, C, BiasV, "bv");
      }
      expectQuantized(Q.token_embedding, C, TokEmbeddings, 0, 4, "embedding");
      expectQuantized(Q.w3[1], C, W3, 1, 4, "w3");
    }
}

TEST_F(FormatsTest, RejectsBadExtensions) {
  const Config C = qwen2Config(true);
  const std::string Good = extendedFile(C, 1, 0);
  auto Rejected = [&](const std::string &File) {
    writeFile(path("x.bin"), File);
    return openError(path("x.bin"));
  };
  std::string Bad = withInt32(Good, 68, 3);
  EXPECT_TRUE(contains(Rejected(Bad), "only bit 0"));
  Bad = Good;
  const float Zero = 0.0f, NaN = std::nanf("");
  std::memcpy(Bad.data() + 72, &Zero, 4);
  EXPECT_TRUE(contains(Rejected(Bad), "rope_theta"));
  Bad = Good;
  std::memcpy(Bad.data() + 76, &NaN, 4);
  EXPECT_TRUE(contains(Rejected(Bad), "norm_eps"));
  Bad = Good;
  Bad[80] = 1; // the padding after the extension
  EXPECT_TRUE(contains(Rejected(Bad), "header byte 80"));
  Bad = Good;
  Bad[64] = 'q'; // no tag: its bytes are llama2.c's padding
  EXPECT_TRUE(contains(Rejected(Bad), "header byte 64"));
  // The bias flag cleared: the file holds biases its header does not
  // announce; set on a file without them: too short.
  EXPECT_TRUE(contains(Rejected(withInt32(Good, 68, 0)), "trailing bytes"));
  Config NoBias = C;
  NoBias.qkv_bias = false;
  EXPECT_TRUE(contains(Rejected(withInt32(extendedFile(NoBias, 1, 0), 68, 1)),
                       "truncated"));
}

/// Any byte of the header set to any of a few values: a checkpoint or a
/// FileError, and when it opens, its header implies exactly the file's size
/// (so every weight lies inside the mapping).
TEST_F(FormatsTest, SurvivesHeaderCorruption) {
  const Config C = smallConfig(false);
  const std::string Files[] = {legacyFile(C), version1File(C),
                               version2File(C, 4)};
  int Opened = 0, Rejected = 0;
  for (const std::string &File : Files) {
    for (size_t At = 0; At < 44; ++At) {
      for (int V : {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff}) {
        std::string Bad = File;
        Bad[At] = static_cast<char>(V);
        writeFile(path("bad.bin"), Bad);
        try {
          const Checkpoint Ckpt = Checkpoint::open(path("bad.bin"));
          ++Opened;
          EXPECT_EQ(Ckpt.fileBytes(), static_cast<int64_t>(File.size()));
          EXPECT_EQ(
              llama::checkpointBytes(
                  Ckpt.config(), Ckpt.version(),
                  Ckpt.isQuantized() ? Ckpt.quantizedWeights().group_size : 0),
              Ckpt.fileBytes());
        } catch (const FileError &E) {
          ++Rejected;
          ASSERT_TRUE(contains(E.what(), path("bad.bin")));
        }
      }
    }
  }
  EXPECT_GT(Opened, 0);   // bytes equal to the original, padding, flags
  EXPECT_GT(Rejected, 0); // most changes
}

//===----------------------------------------------------------------------===//
// The writer
//===----------------------------------------------------------------------===//

/// Every tensor of `Ckpt` (fp32) equals randomWeights(Seed).
void expectRandomWeights(const Checkpoint &Ckpt, uint64_t Seed) {
  const Config &C = Ckpt.config();
  const llama::Weights &W = Ckpt.weights();
  const std::pair<Tensor, const float *> Tensors[] = {
      {Tensor::TokenEmbedding, W.token_embedding},
      {Tensor::RmsAtt, W.rms_att},
      {Tensor::Wq, W.wq},
      {Tensor::Wk, W.wk},
      {Tensor::Wv, W.wv},
      {Tensor::Wo, W.wo},
      {Tensor::RmsFfn, W.rms_ffn},
      {Tensor::W1, W.w1},
      {Tensor::W2, W.w2},
      {Tensor::W3, W.w3},
      {Tensor::RmsFinal, W.rms_final},
      {C.shared_classifier ? Tensor::TokenEmbedding : Tensor::Wcls, W.wcls},
      {Tensor::Bq, W.bq},
      {Tensor::Bk, W.bk},
      {Tensor::Bv, W.bv}};
  for (const auto &[T, P] : Tensors) {
    if (!P && !C.qkv_bias &&
        (T == Tensor::Bq || T == Tensor::Bk || T == Tensor::Bv))
      continue;
    ASSERT_NE(P, nullptr) << "tensor " << static_cast<int>(T);
    const int64_t N = llama::tensorValues(C, T);
    std::vector<float> Want(static_cast<size_t>(N));
    for (int64_t L = 0; L < (llama::isPerLayer(T) ? C.n_layers : 1); ++L) {
      llama::randomWeights(C, Seed, T, L, Want);
      ASSERT_EQ(std::memcmp(P + L * N, Want.data(), Want.size() * 4), 0)
          << "tensor " << static_cast<int>(T) << " layer " << L;
    }
  }
}

Config tinyConfig(bool Shared) {
  Config C = smallConfig(Shared);
  C.dim = 32;
  C.hidden_dim = 44;
  C.n_heads = 4;
  C.n_kv_heads = 2;
  C.vocab_size = 300;
  C.seq_len = 16;
  return C;
}

TEST_F(FormatsTest, WritesVersions0And1ThatReadBack) {
  for (bool Shared : {true, false}) {
    const Config C = tinyConfig(Shared);
    for (int Version : {0, 1}) {
      llama::writeCheckpoint(path("w.bin"), C, Version, /*Seed=*/7);
      EXPECT_FALSE(fs::exists(path("w.bin.partial")));
      const Checkpoint Ckpt = Checkpoint::open(path("w.bin"));
      EXPECT_EQ(Ckpt.version(), Version);
      EXPECT_EQ(Ckpt.fileBytes(), llama::checkpointBytes(C, Version));
      expectConfig(Ckpt.config(), C);
      expectRandomWeights(Ckpt, 7);
      if (Version == 0) {
        // The RoPE tables after rms_final, as export.py writes them.
        const float *Cos = Ckpt.weights().rms_final + C.dim;
        const float *Sin = Cos + C.seq_len * C.head_size() / 2;
        const int64_t Pos = 5, I = 3;
        const double Angle =
            Pos *
            std::pow(10000.0, -2.0 * I / static_cast<double>(C.head_size()));
        EXPECT_NEAR(Cos[Pos * C.head_size() / 2 + I], std::cos(Angle), 1e-6);
        EXPECT_NEAR(Sin[Pos * C.head_size() / 2 + I], std::sin(Angle), 1e-6);
      }
    }
  }
}

TEST_F(FormatsTest, WritesPksExtensionOnlyWhereNeeded) {
  Config C = tinyConfig(false);
  // A Llama 2 file is llama2.c's, byte for byte: zeros after byte 36.
  llama::writeCheckpoint(path("llama.bin"), C, 1, 7);
  const std::string Llama = readFile(path("llama.bin"));
  EXPECT_EQ(Llama.substr(37, 219), std::string(219, '\0'));
  // Qwen2's: the extension, and the biases after the norms.
  C.qkv_bias = true;
  C.rope_theta = 1e6f;
  C.norm_eps = 1e-6f;
  for (int Version : {1, 2}) {
    const int64_t Group = Version == 2 ? llama::fitGroupSize(C, 64) : 0;
    llama::writeCheckpoint(path("qwen.bin"), C, Version, 7, Group);
    const Checkpoint Ckpt = Checkpoint::open(path("qwen.bin"));
    EXPECT_EQ(Ckpt.fileBytes(), llama::checkpointBytes(C, Version, Group));
    expectConfig(Ckpt.config(), C);
    if (Version == 1) {
      expectRandomWeights(Ckpt, 7);
    } else {
      std::vector<float> Want(static_cast<size_t>(C.kv_dim()));
      llama::randomWeights(C, 7, Tensor::Bk, 1, Want);
      EXPECT_EQ(std::memcmp(Ckpt.quantizedWeights().bk + C.kv_dim(),
                            Want.data(), Want.size() * 4),
                0);
      EXPECT_NE(Want[0], 0.0f);
    }
  }
  // Llama's values of the other tensors do not depend on the extension.
  const Checkpoint Qwen = [&] {
    llama::writeCheckpoint(path("qwen.bin"), C, 1, 7);
    return Checkpoint::open(path("qwen.bin"));
  }();
  const Checkpoint Plain = Checkpoint::open(path("llama.bin"));
  const size_t N = static_cast<size_t>(C.n_layers * C.hidden_dim * C.dim);
  EXPECT_EQ(std::memcmp(Qwen.weights().w2, Plain.weights().w2, N * 4), 0);
  // Version 0 has no room for it.
  EXPECT_TRUE(contains(
      fileErrorOf([&] { llama::writeCheckpoint(path("v0.bin"), C, 0, 7); }),
      "version 0 has no room"));
  EXPECT_FALSE(fs::exists(path("v0.bin")));
}

TEST_F(FormatsTest, SameSeedSameWeightsInEveryVersion) {
  const Config C = tinyConfig(true);
  llama::writeCheckpoint(path("a.bin"), C, 0, 3);
  llama::writeCheckpoint(path("b.bin"), C, 1, 3);
  llama::writeCheckpoint(path("c.bin"), C, 1, 4);
  const Checkpoint A = Checkpoint::open(path("a.bin"));
  const Checkpoint B = Checkpoint::open(path("b.bin"));
  const Checkpoint D = Checkpoint::open(path("c.bin"));
  const size_t N = static_cast<size_t>(C.n_layers * C.hidden_dim * C.dim);
  EXPECT_EQ(std::memcmp(A.weights().w2, B.weights().w2, N * 4), 0);
  EXPECT_NE(std::memcmp(B.weights().w2, D.weights().w2, N * 4), 0);
  // Layers differ from each other too.
  EXPECT_NE(std::memcmp(A.weights().w2, A.weights().w2 + N / 2, N / 2 * 4), 0);
}

TEST_F(FormatsTest, WritesVersion2QuantizedAsExportPy) {
  for (bool Shared : {true, false}) {
    const Config C = tinyConfig(Shared);
    const int64_t Group = llama::fitGroupSize(C, 64);
    ASSERT_EQ(Group, 4); // 44 = 4 x 11
    llama::writeCheckpoint(path("q.bin"), C, 2, 9, Group);
    const Checkpoint Ckpt = Checkpoint::open(path("q.bin"));
    EXPECT_EQ(Ckpt.fileBytes(), llama::checkpointBytes(C, 2, Group));
    const llama::QuantizedWeights &Q = Ckpt.quantizedWeights();
    EXPECT_EQ(Q.group_size, Group);
    std::vector<float> Want(static_cast<size_t>(C.dim));
    llama::randomWeights(C, 9, Tensor::RmsFinal, 0, Want);
    EXPECT_EQ(std::memcmp(Q.rms_final, Want.data(), Want.size() * 4), 0);

    auto Check = [&](const llama::QuantizedTensor &QT, Tensor T, int64_t L) {
      const int64_t N = llama::tensorValues(C, T);
      std::vector<float> W(static_cast<size_t>(N));
      llama::randomWeights(C, 9, T, L, W);
      for (int64_t G = 0; G < N / Group; ++G) {
        float Max = 0;
        for (int64_t I = G * Group; I < (G + 1) * Group; ++I)
          Max = std::max(Max, std::fabs(W[static_cast<size_t>(I)]));
        ASSERT_EQ(QT.scales[G], Max / 127.0f);
        for (int64_t I = G * Group; I < (G + 1) * Group; ++I) {
          ASSERT_LE(std::abs(QT.values[I]), 127);
          ASSERT_LE(std::fabs(QT.values[I] * QT.scales[G] -
                              W[static_cast<size_t>(I)]),
                    QT.scales[G] * 0.5f * 1.001f)
              << "tensor " << static_cast<int>(T) << " value " << I;
        }
      }
    };
    Check(Q.token_embedding, Tensor::TokenEmbedding, 0);
    for (int64_t L = 0; L < C.n_layers; ++L) {
      const auto Layer = static_cast<size_t>(L);
      Check(Q.wq[Layer], Tensor::Wq, L);
      Check(Q.wk[Layer], Tensor::Wk, L);
      Check(Q.wv[Layer], Tensor::Wv, L);
      Check(Q.wo[Layer], Tensor::Wo, L);
      Check(Q.w1[Layer], Tensor::W1, L);
      Check(Q.w2[Layer], Tensor::W2, L);
      Check(Q.w3[Layer], Tensor::W3, L);
    }
    Check(Q.wcls, Shared ? Tensor::TokenEmbedding : Tensor::Wcls, 0);
  }
}

TEST_F(FormatsTest, FitsGroupSizesAsExportPyBacksOff) {
  Config C = tinyConfig(true);
  auto Fit = [&](int64_t Dim, int64_t Hidden, int64_t Requested) {
    C.dim = Dim;
    C.hidden_dim = Hidden;
    return llama::fitGroupSize(C, Requested);
  };
  EXPECT_EQ(Fit(288, 768, 64), 32);    // stories15M
  EXPECT_EQ(Fit(768, 2048, 64), 64);   // stories110M
  EXPECT_EQ(Fit(4096, 11008, 64), 64); // Llama 2 7B
  EXPECT_EQ(Fit(64, 172, 64), 4);
  EXPECT_EQ(Fit(63, 172, 64), 1);
  EXPECT_EQ(Fit(64, 64, 0), 1);
}

TEST_F(FormatsTest, WriterRejectsWhatItCannotWrite) {
  const Config C = tinyConfig(true);
  EXPECT_TRUE(contains(
      fileErrorOf([&] { llama::writeCheckpoint(path("w.bin"), C, 3, 1); }),
      "version 3"));
  EXPECT_TRUE(contains(
      fileErrorOf([&] { llama::writeCheckpoint(path("w.bin"), C, 2, 1, 3); }),
      "the group size 3 does not divide"));
  Config Bad = C;
  Bad.n_kv_heads = 3;
  EXPECT_TRUE(contains(
      fileErrorOf([&] { llama::writeCheckpoint(path("w.bin"), Bad, 1, 1); }),
      "n_kv_heads 3"));
  Bad = C;
  Bad.vocab_size = int64_t(1) << 31;
  EXPECT_TRUE(contains(
      fileErrorOf([&] { llama::writeCheckpoint(path("w.bin"), Bad, 1, 1); }),
      "int32"));
  const std::string Nowhere = path("no/such/dir/w.bin");
  EXPECT_TRUE(
      contains(fileErrorOf([&] { llama::writeCheckpoint(Nowhere, C, 1, 1); }),
               "cannot create"));
  EXPECT_FALSE(fs::exists(path("w.bin")));
}

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

/// <unk>, <s>, </s> and the 256 byte tokens, as every vocabulary starts.
llama::Vocabulary baseVocabulary() {
  llama::Vocabulary V;
  V.pieces = {"<unk>", "\n<s>\n", "\n</s>\n"};
  const char *Hex = "0123456789ABCDEF";
  for (int B = 0; B < 256; ++B)
    V.pieces.push_back(std::string("<0x") + Hex[B >> 4] + Hex[B & 15] + ">");
  V.scores.assign(V.pieces.size(), 0.0f);
  return V;
}

/// Adds `Piece` with `Score` and returns its id.
int32_t add(llama::Vocabulary &V, const std::string &Piece, float Score) {
  V.pieces.push_back(Piece);
  V.scores.push_back(Score);
  return static_cast<int32_t>(V.pieces.size() - 1);
}

class TokenizerTest : public FormatsTest {
protected:
  Tokenizer load(const llama::Vocabulary &V) {
    llama::writeTokenizer(path("tok.bin"), V.pieces, V.scores);
    return Tokenizer(path("tok.bin"), static_cast<int64_t>(V.pieces.size()));
  }
};

TEST_F(TokenizerTest, ReadsWhatItWrites) {
  llama::Vocabulary V = baseVocabulary();
  add(V, " ", -1e9f);
  add(V, "hello", -3.5f);
  const Tokenizer Tok = load(V);
  EXPECT_EQ(Tok.vocabSize(), 261);
  EXPECT_EQ(Tok.maxTokenLength(), 6); // "<0x00>" and "\n</s>\n"
  EXPECT_EQ(Tok.piece(260), "hello");
  EXPECT_EQ(Tok.score(260), -3.5f);
  EXPECT_EQ(Tok.lookup("hello"), 260);
  EXPECT_EQ(Tok.lookup("<0x41>"), 3 + 0x41);
  EXPECT_EQ(Tok.lookup("hell"), -1);
  EXPECT_THROW(Tok.piece(261), std::out_of_range);
  EXPECT_THROW(Tok.piece(-1), std::out_of_range);
  // The file: max length, then (score, length, bytes) per token.
  const std::string File = readFile(path("tok.bin"));
  uint32_t MaxLength;
  std::memcpy(&MaxLength, File.data(), 4);
  EXPECT_EQ(MaxLength, 6u);
  EXPECT_EQ(File.substr(File.size() - 5), "hello");
}

TEST_F(TokenizerTest, CopiesOutliveTheOriginal) {
  llama::Vocabulary V = baseVocabulary();
  const int32_t Space = add(V, " ", -1e9f);
  const int32_t Hi = add(V, "hi", -1);
  add(V, "h", -2);
  add(V, "i", -3);
  auto Original = std::make_unique<Tokenizer>(load(V));
  const Tokenizer Copy = *Original;
  Original.reset();
  EXPECT_EQ(Copy.lookup("hi"), Hi);
  EXPECT_EQ(Copy.encode("hi", false, false), (std::vector<int32_t>{Space, Hi}));
}

TEST_F(TokenizerTest, MergesTheBestPairFirst) {
  llama::Vocabulary V = baseVocabulary();
  const int32_t Space = add(V, " ", -1e9f);
  const int32_t A = add(V, "a", -100), B = add(V, "b", -101);
  const int32_t C = add(V, "c", -102);
  const int32_t AB = add(V, "ab", -5);
  add(V, "bc", -1);
  const int32_t ABC = add(V, "abc", -10);
  const int32_t AA = add(V, "aa", -2);
  add(V, "cc", -2e10f); // below run.c's floor of -1e10: never merged
  const Tokenizer Tok = load(V);

  // "bc" (-1) beats "ab" (-5); then a + bc = "abc".
  EXPECT_EQ(Tok.encode("abc", false, false),
            (std::vector<int32_t>{Space, ABC}));
  // "ab" then nothing: "abb" has no "bb".
  EXPECT_EQ(Tok.encode("abb", false, false),
            (std::vector<int32_t>{Space, AB, B}));
  // Equal scores: the leftmost pair.
  EXPECT_EQ(Tok.encode("aaa", false, false),
            (std::vector<int32_t>{Space, AA, A}));
  EXPECT_EQ(Tok.encode("cc", false, false),
            (std::vector<int32_t>{Space, C, C}));
}

TEST_F(TokenizerTest, AddsBosEosAndTheDummyPrefix) {
  llama::Vocabulary V = baseVocabulary();
  const int32_t Space = add(V, " ", -1e9f);
  const int32_t X = add(V, "x", -1);
  const Tokenizer Tok = load(V);
  EXPECT_EQ(Tok.encode("", true, false), (std::vector<int32_t>{1}));
  EXPECT_EQ(Tok.encode("", true, true), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(Tok.encode("", false, false), (std::vector<int32_t>{}));
  EXPECT_EQ(Tok.encode("x", true, true),
            (std::vector<int32_t>{1, Space, X, 2}));
  EXPECT_EQ(Tok.encode("x", false, true), (std::vector<int32_t>{Space, X, 2}));
}

TEST_F(TokenizerTest, FallsBackToBytes) {
  llama::Vocabulary V = baseVocabulary();
  const int32_t Space = add(V, " ", -1e9f);
  const int32_t EAcute = add(V, "\xc3\xa9", -1); // é
  const Tokenizer Tok = load(V);
  // é is a token; ü (c3 bc) is not: its two bytes.
  EXPECT_EQ(Tok.encode("\xc3\xa9\xc3\xbc", false, false),
            (std::vector<int32_t>{Space, EAcute, 3 + 0xc3, 3 + 0xbc}));
  // A 4-byte codepoint (U+1F600) and a stray continuation byte.
  EXPECT_EQ(Tok.encode("\xf0\x9f\x98\x80\x80", false, false),
            (std::vector<int32_t>{Space, 3 + 0xf0, 3 + 0x9f, 3 + 0x98, 3 + 0x80,
                                  3 + 0x80}));
  // A NUL is a byte like the others.
  EXPECT_EQ(Tok.encode(std::string_view("\0", 1), false, false),
            (std::vector<int32_t>{Space, 3}));
}

TEST_F(TokenizerTest, FallsBackWithoutByteTokensOrSpace) {
  // No byte tokens and no " ": unknown bytes and the prefix become <unk>.
  llama::Vocabulary V;
  V.pieces = {"<unk>", "\n<s>\n", "\n</s>\n", "a"};
  V.scores = {0, 0, 0, -1};
  const Tokenizer Tok = load(V);
  EXPECT_EQ(Tok.encode("ab", true, false), (std::vector<int32_t>{1, 0, 3, 0}));
}

TEST_F(TokenizerTest, DecodesAsRunC) {
  llama::Vocabulary V = baseVocabulary();
  const int32_t Space = add(V, " ", -1e9f);
  const int32_t Hello = add(V, " hello", -1);
  const int32_t NotByte = add(V, "<0x4>", -2);
  const Tokenizer Tok = load(V);
  // The leading space goes only right after BOS.
  EXPECT_EQ(Tok.decode(1, Hello), "hello");
  EXPECT_EQ(Tok.decode(2, Hello), " hello");
  EXPECT_EQ(Tok.decode(1, Space), "");
  // <0xXX> pieces are raw bytes.
  EXPECT_EQ(Tok.decode(1, 3 + 0x41), "A");
  EXPECT_EQ(Tok.decode(7, 3 + 0xe9), "\xe9");
  EXPECT_EQ(Tok.decode(7, 3), std::string_view("\0", 1));
  EXPECT_EQ(Tok.decode(7, NotByte), "<0x4>");
  EXPECT_EQ(Tok.decode(1, 1), "\n<s>\n");
  EXPECT_THROW(Tok.decode(1, 9999), std::out_of_range);
}

TEST_F(TokenizerTest, PrintsOnlySafePieces) {
  EXPECT_EQ(llama::safePiece("A"), "A");
  EXPECT_EQ(llama::safePiece(" "), " ");
  EXPECT_EQ(llama::safePiece("\n"), "\n");
  EXPECT_EQ(llama::safePiece("\t"), "\t");
  EXPECT_EQ(llama::safePiece("\x01"), "");
  EXPECT_EQ(llama::safePiece("\x7f"), "");
  EXPECT_EQ(llama::safePiece("\xe9"), ""); // half a character
  EXPECT_EQ(llama::safePiece(""), "");
  EXPECT_EQ(llama::safePiece("\xc3\xa9"), "\xc3\xa9");
  EXPECT_EQ(llama::safePiece(std::string_view("a\0b", 3)), "a");
  EXPECT_EQ(llama::safePiece(std::string_view("\0", 1)), "");
}

TEST_F(TokenizerTest, SyntheticVocabularyRoundTrips) {
  const llama::Vocabulary V = llama::syntheticVocabulary(512);
  ASSERT_EQ(V.pieces.size(), 512u);
  ASSERT_EQ(V.scores.size(), 512u);
  EXPECT_EQ(std::set<std::string>(V.pieces.begin(), V.pieces.end()).size(),
            512u);
  EXPECT_EQ(V.pieces[1], "\n<s>\n");
  EXPECT_EQ(V.pieces[3 + 0x41], "<0x41>");
  EXPECT_EQ(llama::syntheticVocabulary(512).pieces, V.pieces);
  const Tokenizer Tok = load(V);
  const int32_t Space = Tok.lookup(" ");
  ASSERT_GE(Space, 259);
  EXPECT_EQ(Tok.score(Space), -1e9f);
  EXPECT_GE(Tok.lookup("e"), 259);
  EXPECT_GE(Tok.lookup("~"), 259); // every printable ASCII character fits

  // Merges make words shorter than their letters.
  const std::vector<int32_t> Ids = Tok.encode("Once upon a time", true, false);
  EXPECT_LT(Ids.size(), 12u);

  std::mt19937 Rng(1);
  for (int Trial = 0; Trial < 200; ++Trial) {
    std::string Text;
    const int Length = static_cast<int>(Rng() % 40);
    for (int I = 0; I < Length; ++I) {
      const unsigned R = Rng() % 4;
      Text += R == 0   ? static_cast<char>(Rng() % 256)          // any byte
              : R == 1 ? "\xc3\xa9\xe2\x82\xac"[Rng() % 5]       // UTF-8 bits
                       : "the cat sat, Once upon\n"[Rng() % 23]; // text
    }
    const std::vector<int32_t> Tokens = Tok.encode(Text, true, true);
    ASSERT_EQ(Tokens.front(), Tokenizer::Bos);
    ASSERT_EQ(Tokens.back(), Tokenizer::Eos);
    std::string Decoded;
    for (size_t I = 1; I + 1 < Tokens.size(); ++I) {
      ASSERT_GE(Tokens[I], 0);
      ASSERT_LT(Tokens[I], 512);
      Decoded += Tok.decode(Tokens[I - 1], Tokens[I]);
    }
    ASSERT_EQ(Decoded, Text) << "trial " << Trial;
  }
  EXPECT_THROW(llama::syntheticVocabulary(259), std::invalid_argument);
  EXPECT_EQ(llama::syntheticVocabulary(260).pieces.back(), " ");
  EXPECT_EQ(llama::syntheticVocabulary(32000).pieces.size(), 32000u);
}

TEST_F(TokenizerTest, RejectsBadFiles) {
  const llama::Vocabulary V = llama::syntheticVocabulary(300);
  llama::writeTokenizer(path("tok.bin"), V.pieces, V.scores);
  const std::string File = readFile(path("tok.bin"));
  auto Error = [&](const std::string &Bytes, int64_t Vocab = 300) {
    writeFile(path("bad.bin"), Bytes);
    return fileErrorOf([&] { (void)Tokenizer(path("bad.bin"), Vocab); });
  };
  EXPECT_TRUE(
      contains(fileErrorOf([&] { (void)Tokenizer(path("missing.bin"), 300); }),
               path("missing.bin") + ": cannot open"));
  for (size_t N = 0; N < File.size(); N += 7)
    ASSERT_TRUE(contains(Error(File.substr(0, N)), "bad.bin: truncated")) << N;
  EXPECT_TRUE(contains(Error(File.substr(0, File.size() - 1)), "token 299"));
  EXPECT_TRUE(contains(Error(File + "xy"), "2 trailing bytes"));
  EXPECT_TRUE(contains(Error(File, 299), "trailing bytes"));
  EXPECT_TRUE(contains(Error(File, 301), "truncated"));
  EXPECT_TRUE(contains(Error(File, 2), "at least <unk>, <s> and </s>"));

  Bytes Zero; // max_token_length 0
  Zero.u32(0);
  EXPECT_TRUE(contains(Error(Zero.S, 3), "max_token_length is 0"));
  Bytes Long; // a 3-byte piece, the header saying 2
  Long.u32(2);
  Long.f32(0);
  Long.i32(3);
  Long.S += "abc";
  EXPECT_TRUE(contains(Error(Long.S, 3), "token 0 has length 3"));
  Bytes Empty; // an empty piece (run.c cannot read one either)
  Empty.u32(2);
  Empty.f32(0);
  Empty.i32(0);
  EXPECT_TRUE(contains(Error(Empty.S, 3), "token 0 has length 0"));
  Bytes Negative;
  Negative.u32(2);
  Negative.f32(0);
  Negative.i32(-4);
  EXPECT_TRUE(contains(Error(Negative.S, 3), "token 0 has length -4"));

  const std::vector<std::string> WithEmpty = {"a", ""};
  const std::vector<float> TwoScores = {0, 0};
  EXPECT_TRUE(contains(fileErrorOf([&] {
                         llama::writeTokenizer(path("e.bin"), WithEmpty,
                                               TwoScores);
                       }),
                       "token 1"));
  EXPECT_THROW(llama::writeTokenizer(path("e.bin"), V.pieces, TwoScores),
               std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Sampler
//===----------------------------------------------------------------------===//

TEST(SamplerTest, GeneratorMatchesRunC) {
  // From llama2.c's run.c (random_u32, random_f32), seed 42, six draws each
  // from a fresh state, printed with %u and %.9g by a scratch C program
  // built on run.c with -DTESTING.
  uint64_t State = 42;
  const uint32_t U32[] = {1456360119u, 3359763283u, 3393612768u,
                          4054632243u, 3283045847u, 3589475362u};
  for (uint32_t Want : U32)
    EXPECT_EQ(llama::randomU32(State), Want);
  State = 42;
  const float F32[] = {0.339085221f, 0.782255828f, 0.790136993f,
                       0.944042623f, 0.764393628f, 0.835739851f};
  for (float Want : F32)
    EXPECT_EQ(llama::randomF32(State), Want);
  EXPECT_EQ(State, 13894433480154566335ull);
  State = 1234567890123ull;
  EXPECT_EQ(llama::randomU32(State), 4023144865u);
}

TEST(SamplerTest, ArgmaxTakesTheFirstMaximum) {
  EXPECT_EQ(llama::sampleArgmax(std::vector<float>{1, 3, 2, 3}), 1);
  EXPECT_EQ(llama::sampleArgmax(std::vector<float>{-5, -1, -1}), 1);
  EXPECT_EQ(llama::sampleArgmax(std::vector<float>{7}), 0);
}

TEST(SamplerTest, MultinomialWalksTheCdf) {
  const std::vector<float> P = {0.1f, 0.2f, 0.3f, 0.4f};
  EXPECT_EQ(llama::sampleMultinomial(P, 0.0f), 0);
  EXPECT_EQ(llama::sampleMultinomial(P, 0.1f), 1); // cdf 0.1 is not > 0.1
  EXPECT_EQ(llama::sampleMultinomial(P, 0.59f), 2);
  EXPECT_EQ(llama::sampleMultinomial(P, 0.61f), 3);
  // Probabilities that sum below the coin: the last index.
  EXPECT_EQ(llama::sampleMultinomial(std::vector<float>{0.2f, 0.2f}, 0.9f), 1);
}

TEST(SamplerTest, TopPCutsTheNucleus) {
  // Sorted: 0.4 (1), 0.3 (3), 0.15 (4), 0.1 (2), 0.05 (0); the cumulative
  // sum first exceeds 0.75 at 0.85: the nucleus is {1, 3, 4}.
  const std::vector<float> P = {0.05f, 0.4f, 0.1f, 0.3f, 0.15f};
  EXPECT_EQ(llama::sampleTopP(P, 0.75f, 0.0f), 1);
  EXPECT_EQ(llama::sampleTopP(P, 0.75f, 0.5f), 3);   // 0.425 of 0.85
  EXPECT_EQ(llama::sampleTopP(P, 0.75f, 0.999f), 4); // 0.849
  for (float Coin = 0; Coin < 1; Coin += 0.01f) {
    const int32_t Id = llama::sampleTopP(P, 0.75f, Coin);
    EXPECT_TRUE(Id == 1 || Id == 3 || Id == 4) << Coin;
  }
  // A small top-p keeps the most likely token only.
  EXPECT_EQ(llama::sampleTopP(P, 0.3f, 0.99f), 1);
}

TEST(SamplerTest, TopPSortsTiesByIndex) {
  const std::vector<float> P = {0.1f, 0.25f, 0.25f, 0.15f, 0.25f};
  // Nucleus at 0.6: 0.25 (1), 0.25 (2), 0.25 (4) -> 0.75.
  EXPECT_EQ(llama::sampleTopP(P, 0.6f, 0.0f), 1);
  EXPECT_EQ(llama::sampleTopP(P, 0.6f, 0.4f), 2);  // 0.3 of 0.75
  EXPECT_EQ(llama::sampleTopP(P, 0.6f, 0.95f), 4); // 0.7125
}

TEST(SamplerTest, TopPWithEveryProbabilityBelowTheCutoff) {
  // Uniform over 10 with top-p 0.05: the cutoff 0.95 / 9 exceeds every
  // probability (run.c would read before its buffer); the nucleus is the
  // first token.
  const std::vector<float> P(10, 0.1f);
  EXPECT_EQ(llama::sampleTopP(P, 0.05f, 0.7f), 0);
  EXPECT_EQ(llama::sampleTopP(std::vector<float>{1.0f}, 0.5f, 0.3f), 0);
}

TEST(SamplerTest, SamplesAsRunC) {
  // From run.c's sample(), logits {1, 2, 0.5, 3, -1}, seed 42, twelve calls
  // on fresh copies of the logits (the scratch program of
  // GeneratorMatchesRunC).
  const std::vector<float> Logits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f};
  struct Case {
    float Temperature, TopP;
    std::vector<int32_t> Want;
  };
  const Case Cases[] = {
      {1.0f, 0.9f, {3, 1, 1, 0, 1, 1, 3, 3, 3, 1, 3, 3}},
      {1.0f, 0.0f, {2, 3, 3, 3, 3, 3, 1, 3, 1, 3, 3, 2}},
      {0.5f, 0.5f, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}},
      {2.0f, 0.95f, {3, 0, 0, 4, 0, 2, 3, 1, 3, 0, 1, 3}},
  };
  for (const Case &K : Cases) {
    llama::Sampler S(5, K.Temperature, K.TopP, 42);
    std::vector<int32_t> Got;
    for (size_t I = 0; I < K.Want.size(); ++I) {
      std::vector<float> Copy = Logits;
      Got.push_back(S.sample(Copy));
    }
    EXPECT_EQ(Got, K.Want) << K.Temperature << " " << K.TopP;
    EXPECT_EQ(S.state(), 16787652412742646887ull); // twelve draws
  }
  // The logits become run.c's probabilities.
  llama::Sampler S(5, 1.0f, 0.9f, 42);
  std::vector<float> Copy = Logits;
  S.sample(Copy);
  const float Want[] = {0x1.59ad5ep-4f, 0x1.d5d2f6p-3f, 0x1.a353e2p-5f,
                        0x1.3f475p-1f, 0x1.764234p-7f};
  for (size_t I = 0; I < 5; ++I)
    EXPECT_NEAR(Copy[I], Want[I], 1e-7f);
}

TEST(SamplerTest, GreedyDrawsNoCoin) {
  llama::Sampler S(4, 0.0f, 0.9f, 42);
  std::vector<float> Logits = {0.5f, 2.0f, 2.0f, -1.0f};
  EXPECT_EQ(S.sample(Logits), 1);
  EXPECT_EQ(S.state(), 42u);
  EXPECT_EQ(Logits[1], 2.0f); // untouched
  std::vector<float> Short = {1.0f};
  EXPECT_THROW(S.sample(Short), std::invalid_argument);
}

} // namespace
