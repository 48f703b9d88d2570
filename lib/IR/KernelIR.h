//===- KernelIR.h - CUDA kernels with explicit threads ----------*- C++ -*-===//
//
// Kernel IR is the last layer before CUDA text: each fused group becomes one
// or two `__global__` functions whose bodies say everything a CUDA engineer
// would write by hand — which thread and block computes what, shared-memory
// buffers, barriers, warp-shuffle and block reductions, vector loads, and
// boundary guards. The scalar arithmetic stays in Loop IR's three-address
// statements, referenced by index, so both backends print the same ops from
// the same op table. `pkc --emit=kernel` prints it; lib/Target/CUDA prints
// it as CUDA.
//
// Index arithmetic and loop bounds are C++ expressions over the kernel's
// parameters and earlier `let`s: Kernel IR decides *where* each statement
// runs, not how an extent is spelled.
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_KERNELIR_H
#define PK_IR_KERNELIR_H

#include "IR/LoopIR.h"

#include <string>
#include <vector>

namespace pk::kernel {

/// How a Loop IR load or store finds its element.
enum class IndexMode : uint8_t {
  Flat,    ///< `pk_i`: every operand has the domain's shape
  Strided, ///< sum of domain index times stride (0 on broadcast axes)
  Indexed, ///< through Stmt::Dims with every ref's strides
};

struct Stmt {
  enum Kind : uint8_t {
    Comment,     ///< `// Text`
    Let,         ///< `const Type Name = Expr;`
    Var,         ///< `Type Name = Expr;` (mutable)
    Assign,      ///< `Name = Expr;`
    Compute,     ///< Loop IR statement `LoopStmt` of the nest, at `Index`
    AccInit,     ///< declare the accumulator of Loop IR reduce `LoopStmt`
    AccUpdate,   ///< fold the reduce's operand into its accumulator
    AccFinal,    ///< the reduce's value from its accumulator (mean divides)
    WarpReduce,  ///< butterfly over `Expr` lanes (<= 32) of the accumulator
    BlockReduce, ///< combine the warps' accumulators through shared `Name`
    For,         ///< for (int64_t Name = Begin; Name < End; Name += Step)
    If,          ///< if (Expr) Body else Else
    StaticIf,    ///< if constexpr (Expr) Body else Else
    Barrier,     ///< __syncthreads()
    Call,        ///< `Expr;`: a call of a pk::cuda::detail helper
    Strides,     ///< the strides of every ref the nest uses, per `Index`
  };
  Kind K = Comment;
  std::string Type, Name, Expr;
  /// For loops.
  std::string Begin, End, Step;
  bool Unroll = false; ///< For: fully unrolled (a constant trip count)
  /// Compute/Acc*/…Reduce: the Loop IR statement (index into Nest::Body).
  unsigned LoopStmt = 0;
  IndexMode Index = IndexMode::Flat;
  /// AccUpdate: an expression to fold instead of the operand's name.
  std::string Value;
  std::vector<Stmt> Body, Else;

  static Stmt comment(std::string Text);
  static Stmt let(std::string Type, std::string Name, std::string Expr);
  static Stmt var(std::string Type, std::string Name, std::string Expr);
  static Stmt assign(std::string Name, std::string Expr);
  static Stmt compute(unsigned LoopStmt, IndexMode Index);
  static Stmt accInit(unsigned Reduce);
  static Stmt accUpdate(unsigned Reduce, std::string Value = "");
  static Stmt accFinal(unsigned Reduce, std::string Count);
  static Stmt warpReduce(unsigned Reduce, std::string Lanes);
  static Stmt blockReduce(unsigned Reduce, std::string Scratch,
                          std::string Threads);
  static Stmt forLoop(std::string Var, std::string Begin, std::string End,
                      std::string Step, std::vector<Stmt> Body);
  static Stmt ifThen(std::string Cond, std::vector<Stmt> Body,
                     std::vector<Stmt> Else = {});
  static Stmt staticIf(std::string Cond, std::vector<Stmt> Body,
                       std::vector<Stmt> Else = {});
  static Stmt barrier();
  static Stmt call(std::string Expr);
  static Stmt strides(IndexMode Index);
};

/// A `__shared__` array of the kernel.
struct SharedBuffer {
  std::string Name;
  ir::DType Type = ir::DType::F32;
  /// Elements: a constant for static arrays; for the dynamic buffer an
  /// expression over the template parameters (the launcher sizes it).
  std::string Count;
  bool Dynamic = false;
  /// Static arrays: bytes of alignment (0: the element's), e.g. 16 for
  /// float4 reads.
  int Align = 0;
};

struct Param {
  std::string Type, Name;
};

/// One `__global__` function.
struct Kernel {
  std::string Name;
  /// Why it looks the way it does: printed as its leading comment.
  std::vector<std::string> Notes;
  /// `int kThreads` etc.: instantiated by the launcher.
  std::vector<std::string> TemplateParams;
  std::string LaunchBounds; ///< max threads per block, "" when unknown
  std::vector<Param> Params;
  std::vector<SharedBuffer> Shared;
  std::vector<Stmt> Body;
  /// The Loop IR nest whose statements Compute nodes refer to.
  const loop::Nest *Nest = nullptr;
};

/// One way to launch a kernel, taken when `When` holds (the first match).
struct LaunchVariant {
  std::string When;         ///< host condition; "" = otherwise
  std::string TemplateArgs; ///< `32, true`
  std::string Grid, Block;  ///< host expressions (int64 / dim3 parts)
  std::string BlockY = "1";
  std::string SharedBytes = "0";
  std::string Why; ///< one line, printed as a comment
};

/// How the launcher runs one nest: `Setup` statements (host), then one
/// launch per step; each step picks the first matching variant.
struct LaunchStep {
  std::string Kernel;
  std::vector<std::string> Args; ///< host expressions, in parameter order
  std::vector<LaunchVariant> Variants;
};

struct NestLaunch {
  std::string Work;               ///< host expression; nothing runs when 0
  std::vector<std::string> Setup; ///< host statements before the launches
  std::vector<LaunchStep> Steps;  ///< kernels in order
  /// When `SplitWhen` holds, `SplitSetup` and `SplitSteps` run instead of
  /// `Steps` (a reduction split over more blocks, through partials).
  std::string SplitWhen;
  std::vector<std::string> SplitSetup;
  std::vector<LaunchStep> SplitSteps;
  std::vector<std::string> Cleanup; ///< host statements after them
};

/// Kernel IR of one nest (and of its unfused fallback nests).
struct NestKernels {
  std::vector<Kernel> Kernels;
  NestLaunch Launch;
};

struct Program {
  const loop::Program *Loops = nullptr;
  std::vector<NestKernels> Nests; ///< one per Loop IR nest, same order
};

void print(const Program &P, llvm::raw_ostream &OS);
/// Structural checks (one entry per nest and fallback nest, kernel names
/// unique, every launch names a kernel of its nest with one argument per
/// parameter, statements refer to statements of the kernel's nest and
/// accumulator statements to reductions). "" when valid.
std::string verify(const Program &P);

} // namespace pk::kernel

#endif // PK_IR_KERNELIR_H
