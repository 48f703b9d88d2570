//===- main.cpp - pk-llama: llama2.c's `run`, with pk kernels -------------===//
//
//   pk-llama model.bin -n 256 -t 0.8 -p 0.9 -s 42 -i "prompt" -z tokenizer.bin
//
// The command line and stdout are llama2.c's `run` (generate mode; `runq`
// for an int8 version-2 checkpoint): the prompt's pieces, then the sampled
// ones, `-n` counting positions from the first prompt token and clamped to
// the context, stopping at BOS. Unlike `run`, the prompt is prefilled in one
// call of the model (T = prompt length) and only then does decoding go one
// token per call. stderr gets one line of prefill and decode speeds, and
// `run`'s "achieved tok/s" line. Two options of our own: `--dtype bf16` runs
// an fp32 checkpoint with its matrices rounded to bfloat16, and `--cuda` runs
// the kernels' CUDA versions (a build with CUDA kernels).
//
//===----------------------------------------------------------------------===//
#include "checkpoint.h"
#include "model.h"
#include "sampler.h"
#include "tokenizer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <span>
#include <string>
#include <vector>

namespace {

[[noreturn]] void usage() {
  std::fputs(
      "Usage:   pk-llama <checkpoint> [options]\n"
      "Example: pk-llama model.bin -n 256 -i \"Once upon a time\"\n"
      "Options:\n"
      "  -t <float>  temperature in [0,inf], default 1.0\n"
      "  -p <float>  p value in top-p (nucleus) sampling in [0,1], default "
      "0.9\n"
      "  -s <int>    random seed, default time(NULL)\n"
      "  -n <int>    number of steps to run for, default 256. 0 = "
      "max_seq_len\n"
      "  -i <string> input prompt\n"
      "  -z <string> optional path to custom tokenizer\n"
      "  -m <string> mode: generate (chat is not supported), default: "
      "generate\n"
      "  --dtype <string> fp32|bf16: an fp32 checkpoint's matrices as\n"
      "              stored (default) or rounded to bfloat16 (half the size)\n"
      "  --cuda      run the kernels' CUDA versions (a build with CUDA)\n"
      "Checkpoints: llama2.c's version 0 (legacy) and version 1 (fp32), and\n"
      "version 2 (int8 Q8_0, computed as llama2.c's runq does); versions 1\n"
      "and 2 with pk's header extension for Qwen2 (q/k/v biases, its RoPE\n"
      "base and epsilon).\n"
      "Threads: OMP_NUM_THREADS.\n",
      stderr);
  std::exit(EXIT_FAILURE);
}

struct Options {
  std::string Checkpoint;
  std::string Tokenizer = "tokenizer.bin";
  float Temperature = 1.0f;
  float TopP = 0.9f;
  unsigned long long Seed = 0;
  int Steps = 256;
  std::string Prompt;
  std::string Mode = "generate";
  std::string DType; ///< --dtype: "" (not given), "fp32" or "bf16"
  bool Cuda = false; ///< --cuda: the kernels' CUDA versions
};

/// llama2.c's argument rules: `-x value` pairs after the checkpoint, values
/// read with atof/atoi, out-of-range ones replaced by the defaults; and
/// `--dtype fp32|bf16`, anything else for it being the usage text.
Options parseArgs(int Argc, char **Argv) {
  Options O;
  if (Argc < 2)
    usage();
  O.Checkpoint = Argv[1];
  for (int I = 2; I < Argc; I += 2) {
    if (std::strcmp(Argv[I], "--cuda") == 0) { // a flag: no value
      O.Cuda = true;
      --I;
      continue;
    }
    if (I + 1 >= Argc)
      usage();
    const char *V = Argv[I + 1];
    if (std::strcmp(Argv[I], "--dtype") == 0) {
      O.DType = V;
      if (O.DType != "fp32" && O.DType != "bf16")
        usage();
      continue;
    }
    if (Argv[I][0] != '-' || std::strlen(Argv[I]) != 2)
      usage();
    switch (Argv[I][1]) {
    case 't':
      O.Temperature = static_cast<float>(std::atof(V));
      break;
    case 'p':
      O.TopP = static_cast<float>(std::atof(V));
      break;
    case 's':
      O.Seed = static_cast<unsigned long long>(std::atoi(V));
      break;
    case 'n':
      O.Steps = std::atoi(V);
      break;
    case 'i':
      O.Prompt = V;
      break;
    case 'z':
      O.Tokenizer = V;
      break;
    case 'm':
      O.Mode = V;
      break;
    default:
      usage();
    }
  }
  if (O.Seed == 0)
    O.Seed = static_cast<unsigned int>(std::time(nullptr));
  if (O.Temperature < 0)
    O.Temperature = 0;
  if (O.TopP < 0 || O.TopP > 1)
    O.TopP = 0.9f;
  if (O.Steps < 0)
    O.Steps = 0;
  return O;
}

double secondsSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - T)
      .count();
}

int generate(const Options &O) {
  if (O.Mode != "generate") {
    std::fprintf(stderr,
                 "pk-llama: mode '%s': only generate is supported "
                 "(chat mode is not)\n",
                 O.Mode.c_str());
    return EXIT_FAILURE;
  }
  const llama::Checkpoint Ckpt = llama::Checkpoint::open(O.Checkpoint);
  if (Ckpt.isQuantized() && !O.DType.empty()) {
    std::fprintf(stderr,
                 "pk-llama: %s: --dtype %s: an int8 (version 2) checkpoint "
                 "runs in int8; --dtype applies to fp32 (version 0 or 1) "
                 "checkpoints\n",
                 O.Checkpoint.c_str(), O.DType.c_str());
    return EXIT_FAILURE;
  }
  if (O.Cuda && !llama::hasCuda()) {
    std::fprintf(stderr, "pk-llama: --cuda: this pk-llama was built without "
                         "CUDA kernels (configure with nvcc: docs/llama.md)\n");
    return EXIT_FAILURE;
  }
  const llama::Device Device =
      O.Cuda ? llama::Device::Cuda : llama::Device::Cpu;
  const llama::Config &C = Ckpt.config();
  int Steps = O.Steps;
  if (Steps == 0 || Steps > C.seq_len)
    Steps = static_cast<int>(C.seq_len);

  const llama::Tokenizer Tok(O.Tokenizer, C.vocab_size);
  llama::Sampler Sampler(C.vocab_size, O.Temperature, O.TopP, O.Seed);
  llama::Model Model = Ckpt.isQuantized()
                           ? llama::Model(C, Ckpt.quantizedWeights(),
                                          llama::Execution::Compiled, Device)
                           : llama::Model(C, Ckpt.weights(),
                                          O.DType == "bf16" ? llama::DType::BF16
                                                            : llama::DType::F32,
                                          Device);

  const std::vector<int32_t> Prompt = Tok.encode(O.Prompt, /*Bos=*/true,
                                                 /*Eos=*/false);
  const auto NPrompt = static_cast<int64_t>(Prompt.size());
  if (NPrompt > C.seq_len) {
    std::fprintf(stderr,
                 "pk-llama: the prompt is %lld tokens, longer than the "
                 "model's context of %lld\n",
                 static_cast<long long>(NPrompt),
                 static_cast<long long>(C.seq_len));
    return EXIT_FAILURE;
  }

  // Positions 0..Steps-1 as `run` walks them: while pos < NPrompt - 1 the
  // next token is the prompt's, after that it is sampled from the logits of
  // the token at pos. The prompt's logits are needed only when sampling
  // starts inside Steps, and then all at once: one prefill call.
  using Clock = std::chrono::steady_clock;
  const auto Start = Clock::now();
  double PrefillSeconds = 0, DecodeSeconds = 0;
  int64_t Decoded = 0;
  std::span<const float> Logits;
  if (Steps >= NPrompt) {
    Logits = Model.forward(Prompt, 0);
    PrefillSeconds = secondsSince(Start);
  }
  std::vector<float> Scratch(C.vocab_size);
  int32_t Token = Prompt[0];
  int64_t Pos = 0;
  while (Pos < Steps) {
    int32_t Next;
    if (Pos < NPrompt - 1) {
      Next = Prompt[Pos + 1];
    } else {
      if (Pos >= NPrompt) { // the token at Pos was sampled: run it
        const auto T0 = Clock::now();
        Logits = Model.forward(std::span<const int32_t>(&Token, 1), Pos);
        DecodeSeconds += secondsSince(T0);
        ++Decoded;
      }
      Scratch.assign(Logits.begin(), Logits.end()); // the sampler scales it
      Next = Sampler.sample(Scratch);
    }
    ++Pos;
    if (Next == llama::Tokenizer::Bos)
      break;
    llama::printSafePiece(stdout, Tok.decode(Token, Next));
    std::fflush(stdout);
    Token = Next;
  }
  std::printf("\n");

  const int64_t Prefilled = Steps >= NPrompt ? NPrompt : 0;
  std::fprintf(stderr,
               "prefill: %lld tokens, %.2f tok/s; decode: %lld tokens, %.2f "
               "tok/s\n",
               static_cast<long long>(Prefilled),
               PrefillSeconds > 0 ? Prefilled / PrefillSeconds : 0.0,
               static_cast<long long>(Decoded),
               DecodeSeconds > 0 ? Decoded / DecodeSeconds : 0.0);
  // `run`'s line: positions after the first per second of the whole loop.
  if (Pos > 1)
    std::fprintf(stderr, "achieved tok/s: %f\n",
                 (Pos - 1) / secondsSince(Start));
  return EXIT_SUCCESS;
}

} // namespace

int main(int Argc, char **Argv) {
  const Options O = parseArgs(Argc, Argv);
  try {
    return generate(O);
  } catch (const std::exception &E) { // llama::FileError, pk::ShapeError, ...
    std::fprintf(stderr, "pk-llama: %s\n", E.what());
  }
  return EXIT_FAILURE;
}
