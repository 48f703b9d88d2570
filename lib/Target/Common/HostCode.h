//===- HostCode.h - Pieces shared by the C++ and CUDA emitters --*- C++ -*-===//
//
// Both backends check the same entry guards on the host and print the same
// scalar statements (with the spelling column of the op table that fits the
// target). What differs between them — loops versus threads — stays in
// Target/CPU and Target/CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TARGET_HOSTCODE_H
#define PK_TARGET_HOSTCODE_H

#include "IR/LoopIR.h"

#include <functional>
#include <string>
#include <vector>

namespace pk::target {

enum class Backend { Cpu, Cuda };

/// Names the emitters give things; every one starts with `pk_`, which the
/// frontend keeps out of user names. Names built from a user's name end in
/// `_ptr`, `_<axis>` or `_s<axis>`, so they never equal the emitters' own
/// (`pk_n`, `pk_row`, `pk_lane`, ...) whatever the refs are called.
std::string extentVar(const ir::Function &F, unsigned Param, unsigned Axis);
std::string strideVar(const ir::Function &F, unsigned Param, unsigned Axis);
std::string pointerVar(const ir::Function &F, unsigned Param);
std::string indexVar(unsigned Axis); ///< pk_i0, pk_i1, ...
/// The host expression of the first element of buffer `Param`: `x.data()`,
/// or for a window its root's data() moved by the window's offset.
std::string dataExpr(const ir::Function &F, unsigned Param);
/// The row-major stride of axis `Axis` of buffer `Param` in elements: the
/// product of the later extents of its memory (a window's root).
std::string naturalStride(const ir::Function &F, unsigned Param, unsigned Axis);
/// The integer scalar parameters that extents of `F` are computed from
/// (window bounds): CUDA kernels take them along with the extents.
std::vector<unsigned> extentScalars(const ir::Function &F);
/// Whether `Text` contains the identifier `Name` as a whole token.
bool usesName(llvm::StringRef Text, llvm::StringRef Name);
/// Drops the declarations `const int64_t <name> = ...;` of `Text` whose name
/// `Candidate` accepts and that nothing after them in their scope (the
/// following lines indented at least as deep) reads, until none is left:
/// generated code stays free of unused-variable warnings when a view's
/// extent or a stride turns out not to be needed.
std::string
dropUnusedDecls(const std::string &Text,
                llvm::function_ref<bool(llvm::StringRef)> Candidate);
/// The candidates of dropUnusedDecls in host code: strides (`pk_x_s1`) and
/// the extents of views (windows, aliases), which only their loops read.
std::function<bool(llvm::StringRef)> hostLocalCandidates(const ir::Function &F);
/// Checks every window's bounds (language.md §2: 0 <= begin <= end <=
/// extent of its parent), after emitExtents() and before any write.
void emitWindowChecks(const ir::Function &F, std::string &Out,
                      llvm::StringRef Indent);

/// The C++ expression of an extent at run time (after emitExtents()).
std::string extentExpr(const ir::Function &F, ir::ExtentId E);
/// `pk_o_0 * pk_o_1` (or `1` for rank 0).
std::string domainSize(const ir::Function &F, const loop::Nest &N);
/// A C++ string literal with the text escaped.
std::string stringLiteral(llvm::StringRef Text);
/// A literal of the given dtype, valid in C++ and CUDA.
std::string literal(ir::DType T, double FloatValue, int64_t IntValue);

/// Declares `const int64_t pk_x_0 = x.extent(0);` for every ref, and the
/// extents of every temporary from its shape, but those of the params
/// `Skip` names (a temporary no nest addresses any more: fuseGroupedSums).
void emitExtents(const ir::Function &F, std::string &Out,
                 llvm::StringRef Indent,
                 llvm::function_ref<bool(unsigned)> Skip = nullptr);
/// Whether `Param` is a temporary no nest of `P` addresses (and so no
/// buffer): fuseGroupedSums merged its writer and its reader. Nothing sizes
/// or passes it.
bool isUnaddressedTemp(const loop::Program &P, unsigned Param);
/// Where a call's temporaries live.
enum class WorkspaceFrom {
  CpuArena,    ///< pk::rt::Workspace: the calling thread's arena
  CudaScratch, ///< cudaMallocAsync on pk_stream (DeviceScratch)
  CudaCaller,  ///< the launcher's pk_workspace / pk_workspace_bytes
};

/// Declares `pk_<temp>_in_<ref>` for every temporary homed in a ref at run
/// time (loop::Buffer::Home), then `pk_slot<N>`, the bytes of each slot of
/// the workspace (none for a temporary in its home), and returns their sum
/// as an expression ("" when there are no slots). Needs emitExtents() first.
std::string emitWorkspaceSlots(const loop::Program &P, std::string &Out,
                               llvm::StringRef Indent);
/// Declares the workspace of the call and a ref over it for every
/// temporary (ir::ParamKind::Temp) the nests read or write, at the offset
/// of its slot (planBuffers), or over its home ref's memory. Needs
/// emitExtents() first; nothing when there are no temporaries.
void emitTemporaries(const loop::Program &P, WorkspaceFrom From,
                     std::string &Out, llvm::StringRef Indent);
/// Checks every entry guard, throwing pk::ShapeError with a message naming
/// the kernel, the values and their shapes. Needs emitExtents() first.
void emitGuards(const ir::Function &F, std::string &Out,
                llvm::StringRef Indent);
/// Checks the indices of every take (Guard::Indices) against the table's
/// extent, before any write: a pass over an index ref on the host, or, for
/// the CUDA launcher (`OnDevice`), over a host copy of it. Needs
/// emitExtents() first.
void emitIndexChecks(const ir::Function &F, std::string &Out,
                     llvm::StringRef Indent, bool OnDevice);
/// Checks that no written ref shares memory with another ref of the call
/// (pk::AliasError), before any write.
void emitAliasChecks(const ir::Function &F, std::string &Out,
                     llvm::StringRef Indent);
/// Declares the strides of every ref a nest loads (0 on broadcast axes).
void emitStrides(const ir::Function &F, const loop::Nest &N, std::string &Out,
                 llvm::StringRef Indent);

/// `pk_a_0 == pk_o_0 && ...` for the Runtime axes of every load: when true,
/// one flat loop is valid. "" when the nest has no Runtime axis.
std::string flatCondition(const ir::Function &F, const loop::Nest &N);
/// `pk_concat_buf_in_q`: whether temporary `Temp` is in its home ref this
/// call (declared by emitWorkspaceSlots; the copy step then does nothing).
std::string homeFlag(const loop::Program &P, unsigned Temp);
/// The conjunction of the step's When conditions ("" when none).
std::string fuseCondition(const ir::Function &F, const loop::Step &S);
/// Raises the error of every step that has no alternative when its
/// condition fails: at entry, before any write. Needs emitExtents() first.
void emitStepChecks(const loop::Program &P, std::string &Out,
                    llvm::StringRef Indent);

/// The strided index of a load: sum of domain index times stride.
std::string stridedIndex(const ir::Function &F, const loop::Nest &N,
                         const loop::Stmt &Load);

/// The C++ type of a kernel parameter as pkc writes it in declarations:
/// `pk::In<float, 2>`, `pk::Out<double, 1>`, or the scalar's type.
std::string paramType(const ir::Param &P);

/// The pointee type of a ref's pointer in the backend's code (DTypes.def):
/// the element type, except `uint16_t` (C++) and `__half` /
/// `__nv_bfloat16` (CUDA) for the 16-bit storage types.
std::string storageType(ir::DType T, Backend B);
/// The value of the element `Elem` of a ref of dtype `T`: `Elem` itself, or
/// its conversion to float for the 16-bit types.
std::string loadValue(ir::DType T, Backend B, const std::string &Elem);
/// `Value`, of dtype `From`, converted to the value dtype `To`: a
/// static_cast, or pk::scalar::convert from a float to an integer (NaN gives
/// 0, out-of-range values saturate: C++ leaves them undefined).
std::string convertValue(ir::DType From, ir::DType To,
                         const std::string &Value);
/// `Value`, of dtype `ValueType`, converted for a store into a ref of dtype
/// `T`: a static_cast where the types differ; the 16-bit types round from
/// float (a double is converted to float first, as the eager header does).
std::string storeValue(ir::DType T, ir::DType ValueType, Backend B,
                       const std::string &Value);

/// `Op` applied to `Args` in the backend's spelling for dtype `T` (the op
/// table's C++ or CUDA column).
std::string applyOp(ir::OpCode Op, Backend B, ir::DType T,
                    llvm::ArrayRef<std::string> Args);
/// The value of an Index statement: its loop index, or 0 where the indexed
/// value's extent is 1 (Stmt::LoopExtents).
std::string indexValue(const ir::Function &F, const loop::Stmt &Index);
/// A reference to a statement's value: literals inline, others by name.
std::string valueRef(const loop::Nest &N, unsigned I);
/// Prints one statement (not Reduce, which needs a loop around it);
/// `Index` gives the element index of a load or store. `PerRow`: it runs
/// once per row, outside the vector loops (C++: the ops' CppScalar spelling).
void emitStmt(const ir::Function &F, const loop::Nest &N, const loop::Stmt &S,
              Backend B,
              const std::function<std::string(const loop::Stmt &)> &Index,
              std::string &Out, llvm::StringRef Indent, bool PerRow = false);

//===----------------------------------------------------------------------===//
// Indexed nests (reductions, expand_dims/squeeze/index)
//===----------------------------------------------------------------------===//

/// Declares the stride of every axis of every ref the nest reads or writes,
/// 0 where the ref's extent is 1 (so it broadcasts).
void emitIndexedStrides(const ir::Function &F, const loop::Nest &N,
                        std::string &Out, llvm::StringRef Indent);
/// The row axes of an indexed nest (those not reduced), in order.
std::vector<unsigned> rowAxes(const loop::Nest &N);
/// `pk_x_0 * ...` over the row axes ("1" when there are none).
std::string rowCount(const ir::Function &F, const loop::Nest &N);
/// The element index of a load or store of an indexed nest through
/// Stmt::Dims; along `UnitAxis` (>= 0) the stride is taken to be 1, and the
/// index there is `UnitIndex` when given (its loop variable otherwise). A
/// gathered axis (take) is indexed by the value of the load's argument.
std::string indexedIndex(const ir::Function &F, const loop::Nest &N,
                         const loop::Stmt &S, int UnitAxis = -1,
                         llvm::StringRef UnitIndex = "");
/// The accumulator type of a reduction: integer sums accumulate in int64
/// (the eager header does the same), everything else in the result type.
ir::DType accumulatorType(const loop::Nest &N, const loop::Stmt &Reduce);
/// The identity of the reduction, as a literal of type `T`.
std::string accumulatorInit(const loop::Stmt &Reduce, ir::DType T);
/// `pk_acc_<name>`.
std::string accumulatorVar(const loop::Stmt &Reduce);
/// Two partial results of a reduction of accumulator type `T` combined:
/// NaN-propagating maximum/minimum, `A + B`, or for integer sums a wrapping
/// add (language.md §3: integer reductions wrap; `+` of int64 values that
/// overflow would be undefined).
std::string combineAccumulators(ir::ReduceKind K, ir::DType T,
                                const std::string &A, const std::string &B);
/// The statement (no indent, no `;`) that adds `V` to the sum accumulator
/// `A` of type `T`: `A += V`, or `A = pk::scalar::add(A, V)` for integers.
std::string sumUpdate(ir::DType T, const std::string &A, const std::string &V);

} // namespace pk::target

#endif // PK_TARGET_HOSTCODE_H
