//===- RowLoops.h - The CPU loops of reduction nests ------------*- C++ -*-===//
//
// The loops EmitCpp prints for reduction nests and flat bodies: CPU only
// (what both backends print is in Target/Common/HostCode.h).
//
//===----------------------------------------------------------------------===//
#ifndef PK_TARGET_CPU_ROWLOOPS_H
#define PK_TARGET_CPU_ROWLOOPS_H

#include "Target/Common/HostCode.h"

#include <functional>
#include <string>

namespace pk::cpu {

/// Prints the nest's statements, one per line. `Index` gives the element
/// index of a load or store ("pk_i" for flat loops).
void emitBody(const ir::Function &F, const loop::Nest &N,
              const std::function<std::string(const loop::Stmt &)> &Index,
              std::string &Out, llvm::StringRef Indent);

/// The elements an indexed nest touches: rows times the extents reduced (for
/// the threading threshold).
std::string indexedWork(const ir::Function &F, const loop::Nest &N);

/// The body run once per row, with `pk_i<axis>` of every row axis defined:
/// row values, then per phase the inner loops over the reduce axes (with
/// `#pragma omp simd` and reduction clauses on the CPU), accumulators
/// finalised after each loop, and the stores.
/// `RowBuffers` (statement indices) are stored to a per-row scratch buffer
/// by the first loop that computes them and loaded by later loops (CPU).
/// With `UnitAxis` >= 0 every load and store uses stride 1 along that
/// axis: the caller has checked unitStrideCondition() (a strided index with
/// a run-time stride keeps g++ from vectorising a reduction loop).
/// `Streamable` (CPU, `UnitAxis` >= 0, `pk_stream` declared): stores
/// (tile::NestSchedule::StreamedStores) whose loops write through
/// pk/stream.h while `pk_stream` is true.
void emitRowBody(const ir::Function &F, const loop::Nest &N, std::string &Out,
                 const std::string &Indent,
                 llvm::ArrayRef<unsigned> RowBuffers = {}, int UnitAxis = -1,
                 llvm::ArrayRef<unsigned> Streamable = {});

/// `pk_x_s1 == 1 && ...` for every load indexed along domain axis `Axis`
/// ("" when none).
std::string unitStrideCondition(const ir::Function &F, const loop::Nest &N,
                                unsigned Axis);

/// The same over the loads among the statements \p Stmts only (a matrix
/// product's operand).
std::string unitStrideCondition(const ir::Function &F, const loop::Nest &N,
                                unsigned Axis, llvm::ArrayRef<unsigned> Stmts);

/// A column reduction (every axis but the last reduced, one phase, only row
/// stores) for the columns [pk_col_begin, pk_col_end): the reduced axes
/// outside, the columns inside (contiguous reads), one accumulator per
/// column in a block of `Block`.
void emitColumnReduction(const ir::Function &F, const loop::Nest &N,
                         int64_t Block, std::string &Out,
                         const std::string &Indent, int UnitAxis = -1);

} // namespace pk::cpu

#endif // PK_TARGET_CPU_ROWLOOPS_H
