//===- make_checkpoint.cpp - pk-llama-checkpoint: random llama2.c models --===//
//
//   pk-llama-checkpoint --out model.bin --preset stories15M --version 1
//                       --seed 7 --tokenizer tok.bin
//
// Writes a checkpoint of deterministic random weights (writeCheckpoint) in
// any of llama2.c's three formats and any shape (Qwen2's q/k/v biases, RoPE
// base and epsilon in pk's header extension), and optionally a synthetic
// tokenizer of the model's vocab_size: models to test and time pk-llama
// with, no download needed. The same seed and shape give the same weights
// in every version.
//
//===----------------------------------------------------------------------===//

#include "checkpoint.h"
#include "tokenizer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace {

constexpr const char *Usage =
    "Usage: pk-llama-checkpoint --out <file> [options]\n"
    "Writes a llama2.c checkpoint of random weights.\n"
    "Options:\n"
    "  --out <file>          the checkpoint to write (required)\n"
    "  --version 0|1|2       0: legacy (llama2.c's run), 1: fp32 with a\n"
    "                        header, 2: int8 Q8_0 (runq); default 0, or 1\n"
    "                        for a model that needs pk's extension\n"
    "  --preset <name>       tiny (default), stories15M, stories110M,\n"
    "                        tinyllama; Qwen2: qwen2-tiny, qwen2.5-0.5b\n"
    "  --dim <n>             override the preset's shape: model width,\n"
    "  --hidden-dim <n>      SwiGLU width,\n"
    "  --layers <n>          layers,\n"
    "  --heads <n>           query heads,\n"
    "  --kv-heads <n>        key/value heads,\n"
    "  --vocab <n>           vocabulary size,\n"
    "  --seq-len <n>         context length\n"
    "  --unshared            store a classifier apart from the embedding\n"
    "  --qkv-bias            q/k/v projections with biases (Qwen2)\n"
    "  --rope-theta <x>      RoPE base (Llama 2: 10000, Qwen2: 1e6)\n"
    "  --norm-eps <x>        RMSNorm epsilon (Llama 2: 1e-5, Qwen2: 1e-6)\n"
    "  --seed <n>            random seed, default 0\n"
    "  --group-size <n>      Q8_0 group size for version 2, default 64 "
    "(halved\n"
    "                        until it divides dim and hidden_dim)\n"
    "  --tokenizer <file>    also write a synthetic tokenizer.bin of the\n"
    "                        model's vocabulary size (at least 260)\n"
    "  --help                print this and exit\n";

[[noreturn]] void usageError(const std::string &Why) {
  std::fprintf(stderr, "pk-llama-checkpoint: %s\n%s", Why.c_str(), Usage);
  std::exit(2);
}

struct Preset {
  std::string_view Name;
  int64_t Dim, HiddenDim, Layers, Heads, KvHeads, Vocab, SeqLen;
  bool QkvBias = false;
  float RopeTheta = 10000.0f, NormEps = 1e-5f;
};

/// llama2.c's TinyStories models, TinyLlama-1.1B and Qwen2.5-0.5B (its
/// config.json; the tied classifier too); `tiny` and `qwen2-tiny` are ours:
/// small enough for tests, with grouped-query attention (2 and 7 query heads
/// per kv head) and a hidden_dim that is no power of two.
constexpr Preset Presets[] = {
    {"tiny", 64, 172, 2, 4, 2, 512, 128},
    {"stories15M", 288, 768, 6, 6, 6, 32000, 256},
    {"stories110M", 768, 2048, 12, 12, 12, 32000, 1024},
    {"tinyllama", 2048, 5632, 22, 32, 4, 32000, 2048},
    {"qwen2-tiny", 112, 304, 2, 7, 1, 512, 128, true, 1e6f, 1e-6f},
    {"qwen2.5-0.5b", 896, 4864, 24, 14, 2, 151936, 32768, true, 1e6f, 1e-6f},
};

int64_t parseInt(std::string_view Flag, std::string_view Text, int64_t Min) {
  int64_t V = 0;
  const auto [End, Err] =
      std::from_chars(Text.data(), Text.data() + Text.size(), V);
  if (Err != std::errc() || End != Text.data() + Text.size() || V < Min)
    usageError(std::string(Flag) + " wants an integer >= " +
               std::to_string(Min) + ", not '" + std::string(Text) + "'");
  return V;
}

float parsePositive(std::string_view Flag, const std::string &Text) {
  char *End = nullptr;
  const float V = std::strtof(Text.c_str(), &End);
  if (Text.empty() || End != Text.c_str() + Text.size() || !(V > 0.0f) ||
      !std::isfinite(V))
    usageError(std::string(Flag) + " wants a positive number, not '" + Text +
               "'");
  return V;
}

uint64_t parseSeed(std::string_view Text) {
  uint64_t V = 0;
  const auto [End, Err] =
      std::from_chars(Text.data(), Text.data() + Text.size(), V);
  if (Err != std::errc() || End != Text.data() + Text.size())
    usageError("--seed wants a non-negative integer, not '" +
               std::string(Text) + "'");
  return V;
}

struct Options {
  std::string Out, Tokenizer;
  int Version = -1; ///< -1: 0, or 1 when the model needs the extension
  uint64_t Seed = 0;
  int64_t GroupSize = 64;
  llama::Config Cfg;
};

Options parseArgs(int Argc, char **Argv) {
  Options O;
  const Preset *P = &Presets[0];
  // Shape overrides, applied after the preset whatever their order.
  int64_t Dim = 0, HiddenDim = 0, Layers = 0, Heads = 0, KvHeads = 0, Vocab = 0,
          SeqLen = 0;
  bool Unshared = false, QkvBias = false;
  float RopeTheta = 0, NormEps = 0;
  for (int I = 1; I < Argc; ++I) {
    const std::string_view Flag = Argv[I];
    if (Flag == "--help" || Flag == "-h") {
      std::fputs(Usage, stdout);
      std::exit(EXIT_SUCCESS);
    }
    if (Flag == "--unshared") {
      Unshared = true;
      continue;
    }
    if (Flag == "--qkv-bias") {
      QkvBias = true;
      continue;
    }
    if (!Flag.starts_with("--"))
      usageError("unexpected argument '" + std::string(Flag) + "'");
    if (I + 1 >= Argc)
      usageError(std::string(Flag) + " wants a value");
    const std::string_view Value = Argv[++I];
    if (Flag == "--out") {
      O.Out = Value;
    } else if (Flag == "--tokenizer") {
      O.Tokenizer = Value;
    } else if (Flag == "--version") {
      if (Value != "0" && Value != "1" && Value != "2")
        usageError("--version is 0, 1 or 2, not '" + std::string(Value) + "'");
      O.Version = Value[0] - '0';
    } else if (Flag == "--preset") {
      P = nullptr;
      for (const Preset &Candidate : Presets)
        if (Candidate.Name == Value)
          P = &Candidate;
      if (!P)
        usageError("unknown preset '" + std::string(Value) + "'");
    } else if (Flag == "--seed") {
      O.Seed = parseSeed(Value);
    } else if (Flag == "--group-size") {
      O.GroupSize = parseInt(Flag, Value, 1);
    } else if (Flag == "--dim") {
      Dim = parseInt(Flag, Value, 1);
    } else if (Flag == "--hidden-dim") {
      HiddenDim = parseInt(Flag, Value, 1);
    } else if (Flag == "--layers") {
      Layers = parseInt(Flag, Value, 1);
    } else if (Flag == "--heads") {
      Heads = parseInt(Flag, Value, 1);
    } else if (Flag == "--kv-heads") {
      KvHeads = parseInt(Flag, Value, 1);
    } else if (Flag == "--vocab") {
      Vocab = parseInt(Flag, Value, 1);
    } else if (Flag == "--seq-len") {
      SeqLen = parseInt(Flag, Value, 1);
    } else if (Flag == "--rope-theta") {
      RopeTheta = parsePositive(Flag, std::string(Value));
    } else if (Flag == "--norm-eps") {
      NormEps = parsePositive(Flag, std::string(Value));
    } else {
      usageError("unknown option '" + std::string(Flag) + "'");
    }
  }
  if (O.Out.empty())
    usageError("--out is required");

  llama::Config &C = O.Cfg;
  C.dim = Dim ? Dim : P->Dim;
  C.hidden_dim = HiddenDim ? HiddenDim : P->HiddenDim;
  C.n_layers = Layers ? Layers : P->Layers;
  C.n_heads = Heads ? Heads : P->Heads;
  C.n_kv_heads = KvHeads ? KvHeads : P->KvHeads;
  C.vocab_size = Vocab ? Vocab : P->Vocab;
  C.seq_len = SeqLen ? SeqLen : P->SeqLen;
  C.shared_classifier = !Unshared;
  C.qkv_bias = QkvBias || P->QkvBias;
  C.rope_theta = RopeTheta ? RopeTheta : P->RopeTheta;
  C.norm_eps = NormEps ? NormEps : P->NormEps;
  if (const std::string Problem = llama::configProblem(C); !Problem.empty())
    usageError("bad shape: " + Problem);
  if (O.Version < 0)
    O.Version = llama::hasExtension(C) ? 1 : 0;
  else if (O.Version == 0 && llama::hasExtension(C))
    usageError("version 0 cannot hold q/k/v biases, a rope_theta or a "
               "norm_eps other than Llama 2's: use --version 1 or 2");
  return O;
}

} // namespace

int main(int Argc, char **Argv) {
  Options O = parseArgs(Argc, Argv);
  const llama::Config &C = O.Cfg;
  try {
    if (O.Version == 2) {
      const int64_t Fitted = llama::fitGroupSize(C, O.GroupSize);
      if (Fitted != O.GroupSize)
        std::fprintf(stderr,
                     "pk-llama-checkpoint: group size %lld does not divide "
                     "both dim %lld and hidden_dim %lld: using %lld\n",
                     static_cast<long long>(O.GroupSize),
                     static_cast<long long>(C.dim),
                     static_cast<long long>(C.hidden_dim),
                     static_cast<long long>(Fitted));
      O.GroupSize = Fitted;
    }
    // The tokenizer first: it is quick, and a vocabulary too small for it
    // should fail before minutes of writing weights.
    if (!O.Tokenizer.empty()) {
      const llama::Vocabulary V = llama::syntheticVocabulary(C.vocab_size);
      llama::writeTokenizer(O.Tokenizer, V.pieces, V.scores);
    }
    llama::writeCheckpoint(O.Out, C, O.Version, O.Seed, O.GroupSize);
    std::string GroupNote =
        O.Version == 2 ? ", group size " + std::to_string(O.GroupSize) : "";
    if (llama::hasExtension(C)) {
      char Ext[96];
      std::snprintf(Ext, sizeof Ext, ", %srope_theta %g, norm_eps %g",
                    C.qkv_bias ? "q/k/v biases, " : "",
                    static_cast<double>(C.rope_theta),
                    static_cast<double>(C.norm_eps));
      GroupNote += Ext;
    }
    std::printf(
        "wrote %s: version %d, dim %lld, hidden_dim %lld, %lld layers, %lld "
        "heads, %lld kv heads, vocab %lld, seq_len %lld, %s classifier%s, "
        "seed %llu, %lld bytes\n",
        O.Out.c_str(), O.Version, static_cast<long long>(C.dim),
        static_cast<long long>(C.hidden_dim),
        static_cast<long long>(C.n_layers), static_cast<long long>(C.n_heads),
        static_cast<long long>(C.n_kv_heads),
        static_cast<long long>(C.vocab_size), static_cast<long long>(C.seq_len),
        C.shared_classifier ? "shared" : "unshared", GroupNote.c_str(),
        static_cast<unsigned long long>(O.Seed),
        static_cast<long long>(
            llama::checkpointBytes(C, O.Version, O.GroupSize)));
    if (!O.Tokenizer.empty())
      std::printf("wrote %s: %lld tokens\n", O.Tokenizer.c_str(),
                  static_cast<long long>(C.vocab_size));
  } catch (const std::exception &E) {
    std::fprintf(stderr, "pk-llama-checkpoint: %s\n", E.what());
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
