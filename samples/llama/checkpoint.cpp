//===- checkpoint.cpp - llama2.c checkpoint files, read and written -------===//
//
// One table (fileOrder) says in which order each version stores the
// tensors; the reader walks it to point into the mapping, the writer to
// write, and checkpointBytes to size a file, so the three cannot disagree
// about a layout. (FormatsTest checks the table itself against files it
// assembles by hand from export.py's order.)
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace llama {

// The formats are little-endian int32/float32 as llama2.c's struct.pack
// writes them on x86 and ARM; reading them in place needs the same.
static_assert(std::endian::native == std::endian::little,
              "llama2.c checkpoints are little-endian");
static_assert(sizeof(float) == 4);

namespace {

//===----------------------------------------------------------------------===//
// Sizes
//===----------------------------------------------------------------------===//

/// A * B for non-negative operands, or -1 when either is -1 or the product
/// overflows int64: header fields are int32, and three of them multiplied
/// (n_layers * hidden_dim * dim) overflow int64 in a hostile file.
int64_t mulSize(int64_t A, int64_t B) {
  int64_t R;
  if (A < 0 || B < 0 || __builtin_mul_overflow(A, B, &R))
    return -1;
  return R;
}

/// A + B for non-negative operands, or -1 (see mulSize).
int64_t addSize(int64_t A, int64_t B) {
  int64_t R;
  if (A < 0 || B < 0 || __builtin_add_overflow(A, B, &R))
    return -1;
  return R;
}

bool isMatrix(Tensor T) {
  switch (T) {
  case Tensor::TokenEmbedding:
  case Tensor::Wq:
  case Tensor::Wk:
  case Tensor::Wv:
  case Tensor::Wo:
  case Tensor::W1:
  case Tensor::W2:
  case Tensor::W3:
  case Tensor::Wcls:
    return true;
  default:
    return false;
  }
}

const char *tensorName(Tensor T) {
  switch (T) {
  case Tensor::TokenEmbedding:
    return "token_embedding";
  case Tensor::RmsAtt:
    return "rms_att";
  case Tensor::Wq:
    return "wq";
  case Tensor::Wk:
    return "wk";
  case Tensor::Wv:
    return "wv";
  case Tensor::Wo:
    return "wo";
  case Tensor::RmsFfn:
    return "rms_ffn";
  case Tensor::W1:
    return "w1";
  case Tensor::W2:
    return "w2";
  case Tensor::W3:
    return "w3";
  case Tensor::RmsFinal:
    return "rms_final";
  case Tensor::RopeCos:
    return "freq_cis_real";
  case Tensor::RopeSin:
    return "freq_cis_imag";
  case Tensor::Wcls:
    return "wcls";
  case Tensor::Bq:
    return "bq";
  case Tensor::Bk:
    return "bk";
  case Tensor::Bv:
    return "bv";
  }
  return "?";
}

/// The tensors of a `Version` file in the order it stores them (export.py's
/// legacy_export, version1_export, version2_export). Per-layer tensors
/// store their layers one after the other. The q/k/v biases of pk's header
/// extension (versions 1 and 2 only) follow the norms, fp32 like them.
std::vector<Tensor> fileOrder(int Version, const Config &C) {
  using enum Tensor;
  std::vector<Tensor> Order;
  if (Version == 0) {
    Order = {TokenEmbedding, RmsAtt,  Wq,     Wk, Wv, Wo, RmsFfn, W1, W2, W3,
             RmsFinal,       RopeCos, RopeSin};
  } else { // Versions 1 and 2: the norms first (fp32 in both).
    Order = {RmsAtt, RmsFfn, RmsFinal};
    if (C.qkv_bias)
      for (Tensor T : {Bq, Bk, Bv})
        Order.push_back(T);
    for (Tensor T : {TokenEmbedding, Wq, Wk, Wv, Wo, W1, W2, W3})
      Order.push_back(T);
  }
  if (!C.shared_classifier)
    Order.push_back(Wcls);
  return Order;
}

/// Whether `T` is stored as Q8_0 in a `Version` file.
bool isQuantizedIn(int Version, Tensor T) {
  return Version == 2 && isMatrix(T);
}

/// The bytes of one slice (one layer, or the whole tensor) of `Values`
/// values, or -1 on overflow.
int64_t sliceBytes(int Version, Tensor T, int64_t Values, int64_t GroupSize) {
  if (!isQuantizedIn(Version, T))
    return mulSize(Values, 4);
  if (GroupSize <= 0)
    return -1;
  // int8 values, then one fp32 scale per group.
  return addSize(Values, mulSize(Values / GroupSize, 4));
}

int64_t headerBytes(int Version) {
  return Version == 0 ? LegacyHeaderBytes : VersionedHeaderBytes;
}

/// The size of a `Version` file of shape `C`, or -1 when a size overflows
/// int64 (whole tensors at once: a hostile n_layers must not be walked).
int64_t layoutBytes(const Config &C, int Version, int64_t GroupSize) {
  int64_t Offset = headerBytes(Version);
  for (Tensor T : fileOrder(Version, C)) {
    const int64_t Slice = sliceBytes(Version, T, tensorValues(C, T), GroupSize);
    Offset = addSize(Offset, mulSize(isPerLayer(T) ? C.n_layers : 1, Slice));
    if (Offset < 0)
      return -1;
  }
  return Offset;
}

/// Calls Visit(T, Layer, Offset, Values) for every slice of a `Version`
/// file of shape `C` in file order, Offset being its byte offset. Only for
/// shapes whose layoutBytes is not -1.
template <class Visitor>
void walkLayout(const Config &C, int Version, int64_t GroupSize,
                Visitor &&Visit) {
  int64_t Offset = headerBytes(Version);
  for (Tensor T : fileOrder(Version, C)) {
    const int64_t Values = tensorValues(C, T);
    const int64_t Bytes = sliceBytes(Version, T, Values, GroupSize);
    const int64_t Layers = isPerLayer(T) ? C.n_layers : 1;
    for (int64_t L = 0; L < Layers; ++L) {
      Visit(T, L, Offset, Values);
      Offset += Bytes;
    }
  }
}

/// Why `GroupSize` cannot quantize the matrices of `C`, or "".
std::string groupSizeProblem(const Config &C, int64_t GroupSize) {
  if (GroupSize <= 0)
    return "the group size is " + std::to_string(GroupSize) +
           " (it must be positive)";
  for (Tensor T : fileOrder(2, C)) {
    const int64_t Values = tensorValues(C, T);
    if (isMatrix(T) && Values >= 0 && Values % GroupSize != 0)
      return "the group size " + std::to_string(GroupSize) +
             " does not divide the " + std::to_string(Values) + " values of " +
             tensorName(T);
  }
  return "";
}

/// Why the Q8_0 scales of a version-2 file of shape `C` cannot be read in
/// place, or "". They follow each slice's int8 values, so a group size that
/// is not a multiple of 4 can put them off a float's alignment.
std::string alignmentProblem(const Config &C, int64_t GroupSize) {
  std::string Problem;
  walkLayout(C, 2, GroupSize,
             [&](Tensor T, int64_t, int64_t Offset, int64_t Values) {
               if (Problem.empty() && isMatrix(T) && (Offset + Values) % 4 != 0)
                 Problem = "the scales of " + std::string(tensorName(T)) +
                           " are not 4-byte aligned (group size " +
                           std::to_string(GroupSize) +
                           "); they cannot be read in place";
             });
  return Problem;
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

[[noreturn]] void fail(const std::string &Path, const std::string &Why) {
  throw FileError(Path + ": " + Why);
}

int32_t readInt32(const unsigned char *P) {
  int32_t V;
  std::memcpy(&V, P, 4);
  return V;
}

/// An open file descriptor, closed on every path out.
class FileDescriptor {
public:
  explicit FileDescriptor(int Fd) : Fd(Fd) {}
  ~FileDescriptor() {
    if (Fd >= 0)
      ::close(Fd);
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  int get() const { return Fd; }

private:
  int Fd;
};

/// The byte offset of pk's header extension in a version 1 or 2 header,
/// and its size: the tag, flags, rope_theta and norm_eps.
constexpr int64_t ExtensionOffset = 64, ExtensionBytes = 16;
/// The extension's flags: bit 0 is Config::qkv_bias; the others are zero.
constexpr uint32_t QkvBiasFlag = 1;

/// What the header of a checkpoint says.
struct Header {
  int Version = 0;
  Config Cfg;
  int64_t GroupSize = 0;
};

/// Reads pk's header extension at `Ext` (its tag checked) into `C`.
void parseExtension(const std::string &Path, const unsigned char *Ext,
                    Config &C) {
  uint32_t Flags;
  float Theta, Eps;
  std::memcpy(&Flags, Ext + 4, 4);
  std::memcpy(&Theta, Ext + 8, 4);
  std::memcpy(&Eps, Ext + 12, 4);
  if ((Flags & ~QkvBiasFlag) != 0)
    fail(Path, "the extension's flags (bytes 68-71) are " +
                   std::to_string(Flags) +
                   ": only bit 0 (q/k/v biases) is defined");
  auto Positive = [&](float V, const char *Name, const char *Where) {
    if (!(V > 0.0f) || !std::isfinite(V))
      fail(Path, std::string("the extension's ") + Name + " (" + Where +
                     ") is " + std::to_string(V) +
                     ": it must be positive and finite");
  };
  Positive(Theta, "rope_theta", "bytes 72-75");
  Positive(Eps, "norm_eps", "bytes 76-79");
  C.qkv_bias = (Flags & QkvBiasFlag) != 0;
  C.rope_theta = Theta;
  C.norm_eps = Eps;
}

/// Parses the first min(256, FileBytes) bytes of a checkpoint.
Header parseHeader(const std::string &Path, const unsigned char *Bytes,
                   int64_t FileBytes) {
  Header H;
  auto Truncated = [&](int64_t Need, const char *What) {
    fail(Path, "truncated: " + std::to_string(FileBytes) +
                   " bytes, shorter than the " + std::to_string(Need) +
                   "-byte header of " + What);
  };
  if (FileBytes < 4)
    Truncated(LegacyHeaderBytes, "a llama2.c checkpoint");

  const unsigned char *Params;
  int32_t RawVocab;
  uint32_t Magic;
  std::memcpy(&Magic, Bytes, 4);
  if (Magic == CheckpointMagic) {
    if (FileBytes < 8)
      Truncated(VersionedHeaderBytes, "a version 1 or 2 checkpoint");
    H.Version = readInt32(Bytes + 4);
    if (H.Version != 1 && H.Version != 2)
      fail(Path, "unsupported checkpoint version " + std::to_string(H.Version) +
                     " (llama2.c's are 0, 1 and 2)");
    if (FileBytes < VersionedHeaderBytes)
      Truncated(VersionedHeaderBytes, H.Version == 1
                                          ? "a version 1 checkpoint"
                                          : "a version 2 checkpoint");
    Params = Bytes + 8;
    RawVocab = readInt32(Params + 20);
    const unsigned char Shared = Bytes[36];
    if (Shared > 1)
      fail(Path, "the shared-classifier flag (byte 36) is " +
                     std::to_string(Shared) + ", not 0 or 1");
    H.Cfg.shared_classifier = Shared == 1;
    int64_t PaddingStart = 37;
    if (H.Version == 2) {
      H.GroupSize = readInt32(Bytes + 37); // unaligned, as export.py packs it
      PaddingStart = 41;
    }
    uint32_t Tag;
    std::memcpy(&Tag, Bytes + ExtensionOffset, 4);
    const bool Extended = Tag == ExtensionMagic;
    if (Extended)
      parseExtension(Path, Bytes + ExtensionOffset, H.Cfg);
    for (int64_t I = PaddingStart; I < VersionedHeaderBytes; ++I) {
      if (Extended && I == ExtensionOffset)
        I += ExtensionBytes;
      if (Bytes[I] != 0)
        fail(Path, "header byte " + std::to_string(I) +
                       " is not zero (version " + std::to_string(H.Version) +
                       " pads its header with zeros to 256 bytes, apart "
                       "from pk's extension \"pkx1\" at byte 64)");
    }
    if (RawVocab < 0)
      fail(Path, "vocab_size is " + std::to_string(RawVocab) +
                     " (negative is version 0's unshared flag; versions 1 "
                     "and 2 have a flag byte)");
  } else {
    if (FileBytes < LegacyHeaderBytes)
      Truncated(LegacyHeaderBytes, "a version 0 checkpoint");
    H.Version = 0;
    Params = Bytes;
    RawVocab = readInt32(Params + 20);
    H.Cfg.shared_classifier = RawVocab > 0;
  }
  H.Cfg.dim = readInt32(Params);
  H.Cfg.hidden_dim = readInt32(Params + 4);
  H.Cfg.n_layers = readInt32(Params + 8);
  H.Cfg.n_heads = readInt32(Params + 12);
  H.Cfg.n_kv_heads = readInt32(Params + 16);
  H.Cfg.vocab_size = std::abs(static_cast<int64_t>(RawVocab));
  H.Cfg.seq_len = readInt32(Params + 24);

  if (std::string Problem = configProblem(H.Cfg); !Problem.empty()) {
    if (H.Version == 0)
      Problem += " (read as a version 0 checkpoint: the file does not start "
                 "with the magic \"ak42\" of versions 1 and 2)";
    fail(Path, Problem);
  }
  if (H.Version == 2)
    if (std::string Problem = groupSizeProblem(H.Cfg, H.GroupSize);
        !Problem.empty())
      fail(Path, Problem);
  return H;
}

} // namespace

//===----------------------------------------------------------------------===//
// Public helpers
//===----------------------------------------------------------------------===//

std::string configProblem(const Config &C) {
  const std::pair<const char *, int64_t> Sizes[] = {
      {"dim", C.dim},
      {"hidden_dim", C.hidden_dim},
      {"n_layers", C.n_layers},
      {"n_heads", C.n_heads},
      {"n_kv_heads", C.n_kv_heads},
      {"vocab_size", C.vocab_size},
      {"seq_len", C.seq_len}};
  for (const auto &[Name, Value] : Sizes)
    if (Value > INT32_MAX)
      return std::string(Name) + " is " + std::to_string(Value) +
             " (a checkpoint stores it as an int32)";
  return shapeProblem(C);
}

bool isPerLayer(Tensor T) {
  switch (T) {
  case Tensor::RmsAtt:
  case Tensor::Wq:
  case Tensor::Wk:
  case Tensor::Wv:
  case Tensor::Wo:
  case Tensor::RmsFfn:
  case Tensor::W1:
  case Tensor::W2:
  case Tensor::W3:
  case Tensor::Bq:
  case Tensor::Bk:
  case Tensor::Bv:
    return true;
  default:
    return false;
  }
}

bool hasExtension(const Config &C) {
  const Config Llama;
  return C.qkv_bias || C.rope_theta != Llama.rope_theta ||
         C.norm_eps != Llama.norm_eps;
}

int64_t tensorValues(const Config &C, Tensor T) {
  switch (T) {
  case Tensor::TokenEmbedding:
  case Tensor::Wcls:
    return mulSize(C.vocab_size, C.dim);
  case Tensor::RmsAtt:
  case Tensor::RmsFfn:
  case Tensor::RmsFinal:
  case Tensor::Bq:
    return C.dim;
  case Tensor::Bk:
  case Tensor::Bv:
    return C.kv_dim();
  case Tensor::Wq:
  case Tensor::Wo:
    return mulSize(C.dim, C.dim);
  case Tensor::Wk:
  case Tensor::Wv:
    return mulSize(C.kv_dim(), C.dim);
  case Tensor::W1:
  case Tensor::W2:
  case Tensor::W3:
    return mulSize(C.hidden_dim, C.dim);
  case Tensor::RopeCos:
  case Tensor::RopeSin:
    return mulSize(C.seq_len, C.head_size() / 2);
  }
  return -1;
}

int64_t checkpointBytes(const Config &C, int Version, int64_t GroupSize) {
  return layoutBytes(C, Version, GroupSize);
}

int64_t fitGroupSize(const Config &C, int64_t Requested) {
  int64_t G = std::max<int64_t>(Requested, 1);
  while (G > 1 && (C.dim % G != 0 || C.hidden_dim % G != 0))
    G /= 2;
  return G;
}

//===----------------------------------------------------------------------===//
// Checkpoint
//===----------------------------------------------------------------------===//

Checkpoint Checkpoint::open(const std::string &Path) {
  FileDescriptor Fd(::open(Path.c_str(), O_RDONLY | O_CLOEXEC));
  if (Fd.get() < 0)
    fail(Path, std::string("cannot open: ") + std::strerror(errno));
  struct stat St;
  if (::fstat(Fd.get(), &St) != 0)
    fail(Path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(St.st_mode))
    fail(Path, "not a regular file");
  const int64_t FileBytes = St.st_size;

  unsigned char HeaderBuf[VersionedHeaderBytes] = {};
  const auto Want =
      static_cast<size_t>(std::min<int64_t>(FileBytes, VersionedHeaderBytes));
  size_t Got = 0;
  while (Got < Want) {
    const ssize_t N =
        ::pread(Fd.get(), HeaderBuf + Got, Want - Got, static_cast<off_t>(Got));
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      fail(Path, std::string("cannot read the header: ") +
                     (N < 0 ? std::strerror(errno) : "unexpected end of file"));
    Got += static_cast<size_t>(N);
  }
  const Header H = parseHeader(Path, HeaderBuf, FileBytes);

  const int64_t Expected = checkpointBytes(H.Cfg, H.Version, H.GroupSize);
  if (Expected < 0)
    fail(Path, "the sizes in the header overflow 64-bit byte counts");
  if (FileBytes < Expected)
    fail(Path, "truncated: the header implies " + std::to_string(Expected) +
                   " bytes, the file has " + std::to_string(FileBytes));
  if (FileBytes > Expected)
    fail(Path, std::to_string(FileBytes - Expected) +
                   " trailing bytes: the header implies " +
                   std::to_string(Expected) + " bytes, the file has " +
                   std::to_string(FileBytes));
  if (H.Version == 2)
    if (std::string Problem = alignmentProblem(H.Cfg, H.GroupSize);
        !Problem.empty())
      fail(Path, Problem);

  void *Map = ::mmap(nullptr, static_cast<size_t>(FileBytes), PROT_READ,
                     MAP_PRIVATE, Fd.get(), 0);
  if (Map == MAP_FAILED)
    fail(Path, std::string("cannot map: ") + std::strerror(errno));

  Checkpoint Ckpt;
  Ckpt.Path = Path;
  Ckpt.Version = H.Version;
  Ckpt.Cfg = H.Cfg;
  Ckpt.Mapping = Map;
  Ckpt.Bytes = FileBytes;
  const auto *Base = static_cast<const unsigned char *>(Map);
  if (H.Version == 2) {
    QuantizedWeights &Q = Ckpt.Q;
    Q.group_size = H.GroupSize;
    for (auto *Layers : {&Q.wq, &Q.wk, &Q.wv, &Q.wo, &Q.w1, &Q.w2, &Q.w3})
      Layers->resize(static_cast<size_t>(H.Cfg.n_layers));
    walkLayout(H.Cfg, 2, H.GroupSize,
               [&](Tensor T, int64_t L, int64_t Offset, int64_t Values) {
                 const unsigned char *P = Base + Offset;
                 const auto *F = reinterpret_cast<const float *>(P);
                 const QuantizedTensor QT{
                     reinterpret_cast<const int8_t *>(P),
                     reinterpret_cast<const float *>(P + Values)};
                 const auto Layer = static_cast<size_t>(L);
                 switch (T) {
                 case Tensor::RmsAtt:
                   if (L == 0)
                     Q.rms_att = F;
                   break;
                 case Tensor::RmsFfn:
                   if (L == 0)
                     Q.rms_ffn = F;
                   break;
                 case Tensor::RmsFinal:
                   Q.rms_final = F;
                   break;
                 case Tensor::Bq:
                   if (L == 0)
                     Q.bq = F;
                   break;
                 case Tensor::Bk:
                   if (L == 0)
                     Q.bk = F;
                   break;
                 case Tensor::Bv:
                   if (L == 0)
                     Q.bv = F;
                   break;
                 case Tensor::TokenEmbedding:
                   Q.token_embedding = QT;
                   break;
                 case Tensor::Wq:
                   Q.wq[Layer] = QT;
                   break;
                 case Tensor::Wk:
                   Q.wk[Layer] = QT;
                   break;
                 case Tensor::Wv:
                   Q.wv[Layer] = QT;
                   break;
                 case Tensor::Wo:
                   Q.wo[Layer] = QT;
                   break;
                 case Tensor::W1:
                   Q.w1[Layer] = QT;
                   break;
                 case Tensor::W2:
                   Q.w2[Layer] = QT;
                   break;
                 case Tensor::W3:
                   Q.w3[Layer] = QT;
                   break;
                 case Tensor::Wcls:
                   Q.wcls = QT;
                   break;
                 case Tensor::RopeCos:
                 case Tensor::RopeSin:
                   break;
                 }
               });
    if (H.Cfg.shared_classifier)
      Q.wcls = Q.token_embedding;
  } else {
    Weights &W = Ckpt.W;
    walkLayout(H.Cfg, H.Version, 0,
               [&](Tensor T, int64_t L, int64_t Offset, int64_t) {
                 if (L != 0) // fp32 layers are stacked: point at layer 0
                   return;
                 const auto *F = reinterpret_cast<const float *>(Base + Offset);
                 switch (T) {
                 case Tensor::TokenEmbedding:
                   W.token_embedding = F;
                   break;
                 case Tensor::RmsAtt:
                   W.rms_att = F;
                   break;
                 case Tensor::Wq:
                   W.wq = F;
                   break;
                 case Tensor::Wk:
                   W.wk = F;
                   break;
                 case Tensor::Wv:
                   W.wv = F;
                   break;
                 case Tensor::Wo:
                   W.wo = F;
                   break;
                 case Tensor::RmsFfn:
                   W.rms_ffn = F;
                   break;
                 case Tensor::W1:
                   W.w1 = F;
                   break;
                 case Tensor::W2:
                   W.w2 = F;
                   break;
                 case Tensor::W3:
                   W.w3 = F;
                   break;
                 case Tensor::RmsFinal:
                   W.rms_final = F;
                   break;
                 case Tensor::Wcls:
                   W.wcls = F;
                   break;
                 case Tensor::Bq:
                   W.bq = F;
                   break;
                 case Tensor::Bk:
                   W.bk = F;
                   break;
                 case Tensor::Bv:
                   W.bv = F;
                   break;
                 case Tensor::RopeCos:
                 case Tensor::RopeSin:
                   break;
                 }
               });
    if (H.Cfg.shared_classifier)
      W.wcls = W.token_embedding;
  }
  return Ckpt;
}

Checkpoint::Checkpoint(Checkpoint &&Other) noexcept
    : Path(std::move(Other.Path)), Version(Other.Version), Cfg(Other.Cfg),
      W(Other.W), Q(std::move(Other.Q)), Mapping(Other.Mapping),
      Bytes(Other.Bytes) {
  Other.Mapping = nullptr;
  Other.Bytes = 0;
}

Checkpoint &Checkpoint::operator=(Checkpoint &&Other) noexcept {
  if (this != &Other) {
    unmap();
    Path = std::move(Other.Path);
    Version = Other.Version;
    Cfg = Other.Cfg;
    W = Other.W;
    Q = std::move(Other.Q);
    Mapping = Other.Mapping;
    Bytes = Other.Bytes;
    Other.Mapping = nullptr;
    Other.Bytes = 0;
  }
  return *this;
}

Checkpoint::~Checkpoint() { unmap(); }

void Checkpoint::unmap() {
  if (Mapping)
    ::munmap(const_cast<void *>(Mapping), static_cast<size_t>(Bytes));
  Mapping = nullptr;
}

const Weights &Checkpoint::weights() const {
  if (isQuantized())
    fail(Path, "an int8 (version 2) checkpoint has no fp32 weights");
  return W;
}

const QuantizedWeights &Checkpoint::quantizedWeights() const {
  if (!isQuantized())
    fail(Path, "a version " + std::to_string(Version) +
                   " checkpoint has fp32 weights, not int8 ones");
  return Q;
}

//===----------------------------------------------------------------------===//
// Random weights
//===----------------------------------------------------------------------===//

namespace {

/// splitmix64: fast, and every seed (0 included) gives a good stream.
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t Seed) : State(Seed) {}
  uint64_t next() {
    uint64_t Z = (State += 0x9e3779b97f4a7c15ULL);
    Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebULL;
    return Z ^ (Z >> 31);
  }
  /// Uniform in [-1, 1), on the 2^24 float grid.
  float nextSigned() {
    return static_cast<float>(next() >> 40) * 0x1p-23f - 1.0f;
  }

private:
  uint64_t State;
};

/// The values of one slice of randomWeights, produced in order in chunks of
/// any size (the writer never holds a whole tensor).
class WeightStream {
public:
  WeightStream(const Config &C, uint64_t Seed, Tensor T, int64_t Layer)
      : C(C), T(T), Rng(streamSeed(Seed, T, Layer)) {
    const auto Dim = static_cast<float>(C.dim);
    switch (T) {
    case Tensor::TokenEmbedding:
    case Tensor::Wcls:
      Scale = EmbeddingScale;
      break;
    case Tensor::RmsFinal:
      Scale = LogitStd / (EmbeddingScale / std::sqrt(3.0f) * std::sqrt(Dim));
      break;
    case Tensor::RmsAtt:
    case Tensor::RmsFfn:
      Scale = 1.0f;
      break;
    case Tensor::W2:
      Scale = MatrixGain / std::sqrt(static_cast<float>(C.hidden_dim));
      break;
    case Tensor::Bq:
    case Tensor::Bk:
    case Tensor::Bv:
      Scale = BiasScale;
      break;
    default:
      Scale = MatrixGain / std::sqrt(Dim);
      break;
    }
  }

  void fill(std::span<float> Out) {
    switch (T) {
    case Tensor::RmsAtt:
    case Tensor::RmsFfn:
    case Tensor::RmsFinal:
      for (float &X : Out)
        X = Scale * (1.0f + 0.2f * Rng.nextSigned());
      break;
    case Tensor::RopeCos:
    case Tensor::RopeSin: {
      // export.py's precompute_freqs_cis, row pos, column i.
      const int64_t Half = C.head_size() / 2;
      for (float &X : Out) {
        const int64_t Pos = Produced / Half, I = Produced % Half;
        const double Freq = std::pow(static_cast<double>(C.rope_theta),
                                     -2.0 * static_cast<double>(I) /
                                         static_cast<double>(C.head_size()));
        const double Angle = static_cast<double>(Pos) * Freq;
        X = static_cast<float>(T == Tensor::RopeCos ? std::cos(Angle)
                                                    : std::sin(Angle));
        ++Produced;
      }
      return;
    }
    default:
      for (float &X : Out)
        X = Scale * Rng.nextSigned();
      break;
    }
    Produced += static_cast<int64_t>(Out.size());
  }

private:
  // Random transformers with unit-gain matrices settle after a few tokens
  // into repeating one token under greedy decoding, which hides cache and
  // position bugs. A gain above 1 (uniform in +-3/sqrt(fan_in): each matmul
  // multiplies the variance by 3) and an embedding small next to the layers'
  // outputs keep the next token a chaotic function of the whole context.
  static constexpr float MatrixGain = 3.0f;
  static constexpr float EmbeddingScale = 0.1f;
  /// The q/k/v biases: uniform in +-0.5, a third of a projection's standard
  /// deviation (about 1.7), enough to move every attention score.
  static constexpr float BiasScale = 0.5f;
  /// rms_final scales the logits alone: it is set so that their standard
  /// deviation is about this much at any dim (the classifier is the
  /// embedding), which makes sampling at temperature 1 neither uniform nor
  /// greedy.
  static constexpr float LogitStd = 2.0f;

  static uint64_t streamSeed(uint64_t Seed, Tensor T, int64_t Layer) {
    SplitMix64 Mix(Seed);
    return Mix.next() ^ (static_cast<uint64_t>(T) << 48) ^
           static_cast<uint64_t>(Layer) * 0x9e3779b97f4a7c15ULL;
  }

  const Config &C;
  Tensor T;
  SplitMix64 Rng;
  float Scale = 1.0f;
  int64_t Produced = 0;
};

/// export.py's quantize_q80 on one group: scale = max|x| / 127, values
/// round(x / scale) (half to even, as torch.round), in fp32 throughout.
float quantizeGroup(std::span<const float> X, int8_t *Out) {
  float Max = 0.0f;
  for (float V : X)
    Max = std::max(Max, std::fabs(V));
  const float Scale = Max / 127.0f;
  for (size_t I = 0; I < X.size(); ++I) {
    const float Q = Scale == 0.0f ? 0.0f : std::nearbyint(X[I] / Scale);
    Out[I] = static_cast<int8_t>(std::clamp(Q, -127.0f, 127.0f));
  }
  return Scale;
}

/// A file written to `Path`.partial and renamed to `Path` by commit();
/// removed if never committed.
class PartialFile {
public:
  explicit PartialFile(const std::string &Path)
      : Path(Path), TempPath(Path + ".partial") {
    File = std::fopen(TempPath.c_str(), "wb");
    if (!File)
      fail(Path, std::string("cannot create ") + TempPath + ": " +
                     std::strerror(errno));
    std::setvbuf(File, nullptr, _IOFBF, 1 << 20);
  }
  ~PartialFile() {
    if (File) {
      std::fclose(File);
      std::remove(TempPath.c_str());
    }
  }
  PartialFile(const PartialFile &) = delete;
  PartialFile &operator=(const PartialFile &) = delete;

  void write(const void *Data, size_t Bytes) {
    if (Bytes != 0 && std::fwrite(Data, 1, Bytes, File) != Bytes)
      fail(Path, std::string("cannot write ") + TempPath + ": " +
                     std::strerror(errno));
  }

  void commit() {
    std::FILE *F = File;
    File = nullptr;
    if (std::fclose(F) != 0) {
      std::remove(TempPath.c_str());
      fail(Path, std::string("cannot write ") + TempPath + ": " +
                     std::strerror(errno));
    }
    if (std::rename(TempPath.c_str(), Path.c_str()) != 0) {
      const int Err = errno;
      std::remove(TempPath.c_str());
      fail(Path, std::string("cannot rename ") + TempPath + ": " +
                     std::strerror(Err));
    }
  }

private:
  std::string Path, TempPath;
  std::FILE *File = nullptr;
};

/// The header of a `Version` file of shape `C`.
std::vector<unsigned char> makeHeader(const Config &C, int Version,
                                      int64_t GroupSize) {
  std::vector<unsigned char> H(static_cast<size_t>(headerBytes(Version)), 0);
  auto Put = [&](size_t At, int64_t V) {
    const auto I = static_cast<int32_t>(V); // configProblem bounds V
    std::memcpy(H.data() + At, &I, 4);
  };
  size_t Params = 0;
  if (Version != 0) {
    std::memcpy(H.data(), &CheckpointMagic, 4);
    Put(4, Version);
    Params = 8;
  }
  Put(Params, C.dim);
  Put(Params + 4, C.hidden_dim);
  Put(Params + 8, C.n_layers);
  Put(Params + 12, C.n_heads);
  Put(Params + 16, C.n_kv_heads);
  Put(Params + 20,
      Version == 0 && !C.shared_classifier ? -C.vocab_size : C.vocab_size);
  Put(Params + 24, C.seq_len);
  if (Version != 0)
    H[36] = C.shared_classifier ? 1 : 0;
  if (Version == 2)
    Put(37, GroupSize);
  if (Version != 0 && hasExtension(C)) {
    const uint32_t Flags = C.qkv_bias ? QkvBiasFlag : 0;
    unsigned char *Ext = H.data() + ExtensionOffset;
    std::memcpy(Ext, &ExtensionMagic, 4);
    std::memcpy(Ext + 4, &Flags, 4);
    std::memcpy(Ext + 8, &C.rope_theta, 4);
    std::memcpy(Ext + 12, &C.norm_eps, 4);
  }
  return H;
}

} // namespace

void randomWeights(const Config &C, uint64_t Seed, Tensor T, int64_t Layer,
                   std::span<float> Out) {
  WeightStream(C, Seed, T, Layer).fill(Out);
}

void writeCheckpoint(const std::string &Path, const Config &C, int Version,
                     uint64_t Seed, int64_t GroupSize) {
  if (std::string Problem = configProblem(C); !Problem.empty())
    fail(Path, Problem);
  if (Version < 0 || Version > 2)
    fail(Path, "cannot write checkpoint version " + std::to_string(Version) +
                   " (llama2.c's are 0, 1 and 2)");
  if (Version == 0 && hasExtension(C))
    fail(Path, "version 0 has no room for q/k/v biases, rope_theta or "
               "norm_eps other than Llama 2's: write version 1 or 2");
  if (!(C.rope_theta > 0.0f) || !std::isfinite(C.rope_theta) ||
      !(C.norm_eps > 0.0f) || !std::isfinite(C.norm_eps))
    fail(Path, "rope_theta and norm_eps must be positive and finite");
  if (Version == 2) {
    if (std::string Problem = groupSizeProblem(C, GroupSize); !Problem.empty())
      fail(Path, Problem);
    if (GroupSize > INT32_MAX)
      fail(Path, "the group size " + std::to_string(GroupSize) +
                     " does not fit in the header's int32");
  }
  if (checkpointBytes(C, Version, GroupSize) < 0)
    fail(Path, "the checkpoint would be larger than 2^63 bytes");
  if (Version == 2)
    if (std::string Problem = alignmentProblem(C, GroupSize); !Problem.empty())
      fail(Path, Problem);

  PartialFile File(Path);
  const std::vector<unsigned char> Header = makeHeader(C, Version, GroupSize);
  File.write(Header.data(), Header.size());

  // Chunks of whole groups for Q8_0, about 256 KiB of floats either way.
  const int64_t Group = Version == 2 ? GroupSize : 1;
  const int64_t ChunkValues = std::max<int64_t>(65536 / Group, 1) * Group;
  std::vector<float> Values;
  std::vector<int8_t> Quantized;
  std::vector<float> Scales;
  walkLayout(
      C, Version, GroupSize,
      [&](Tensor T, int64_t Layer, int64_t, int64_t Count) {
        WeightStream Stream(C, Seed, T, Layer);
        const bool Q8 = isQuantizedIn(Version, T);
        Scales.clear();
        for (int64_t Done = 0; Done < Count;) {
          const int64_t N = std::min(ChunkValues, Count - Done);
          Values.resize(static_cast<size_t>(N));
          Stream.fill(Values);
          if (!Q8) {
            File.write(Values.data(), Values.size() * sizeof(float));
          } else {
            Quantized.resize(Values.size());
            for (int64_t G = 0; G < N; G += Group)
              Scales.push_back(quantizeGroup(
                  std::span<const float>(Values).subspan(
                      static_cast<size_t>(G), static_cast<size_t>(Group)),
                  Quantized.data() + G));
            File.write(Quantized.data(), Quantized.size());
          }
          Done += N;
        }
        if (Q8)
          File.write(Scales.data(), Scales.size() * sizeof(float));
      });
  File.commit();
}

} // namespace llama
