//===- GraphIR.h - SSA graph over whole arrays ------------------*- C++ -*-===//
//
// Graph IR is the first layer below the AST: a kernel is a list of SSA nodes
// over whole arrays. Each node has a dtype and a shape whose extents are
// symbolic (`x.0`, constants, broadcasts of two extents). Stores are the only
// side effects and keep their source order. No Clang type ever appears here.
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_GRAPHIR_H
#define PK_IR_GRAPHIR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace pk::ir {

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

/// The element types (DTypes.def). F16, BF16, I8 and U8 are storage-only:
/// refs have them, values never (a load gives F32, or I32 for the 8-bit
/// types; a store converts).
enum class DType : uint8_t {
#define PK_DTYPE(Code, ...) Code,
#include "DTypes.def"
};

struct DTypeInfo {
  DType Code;
  llvm::StringRef Name;        ///< printed in the IR: "f32", "f16", ...
  llvm::StringRef Cpp;         ///< "float", "pk::half", ...
  unsigned Bytes;              ///< of one element (bool: 1)
  DType Compute;               ///< the dtype of a loaded value
  llvm::StringRef CpuStorage;  ///< pointee type in generated C++
  llvm::StringRef CpuLoad;     ///< fmt template over {0}: the element
  llvm::StringRef CpuStore;    ///< fmt template over {0}: a Compute value
  llvm::StringRef CudaStorage; ///< pointee type in CUDA kernels
  llvm::StringRef CudaLoad;
  llvm::StringRef CudaStore;
  llvm::StringRef CudaHeader; ///< declares CudaStorage ("" for none)
};

const DTypeInfo &dtypeInfo(DType T);
llvm::ArrayRef<DTypeInfo> allDTypes();

/// "bool", "i32", "i64", "f32", "f64", "f16", "bf16", "i8", "u8" as printed
/// in the IR.
llvm::StringRef dtypeName(DType T);
/// The C++ spelling: "bool", "int32_t", "int64_t", "float", "double",
/// "pk::half", "pk::bfloat16", "int8_t", "uint8_t".
llvm::StringRef dtypeCppName(DType T);
/// Bytes of one element (bool: 1).
unsigned dtypeBytes(DType T);
/// The dtype values loaded from a ref of dtype T have (F32 for F16, BF16;
/// I32 for I8, U8).
DType computeType(DType T);
/// F16, BF16, I8, U8: a ref may have it, a value may not.
bool isStorageOnly(DType T);
/// F32 or F64: the float dtypes of values.
bool isFloat(DType T);
bool isInteger(DType T); // I32 or I64 (not bool)

//===----------------------------------------------------------------------===//
// The op table (Ops.def)
//===----------------------------------------------------------------------===//

enum class OpCode : uint8_t {
#define PK_OP(Code, ...) Code,
#include "Ops.def"
};

enum class ResultRule : uint8_t { Same, Bool };
enum class OpCost : uint8_t { Cheap, Costly };

struct OpInfo {
  OpCode Code;
  llvm::StringRef Name;   ///< printed in the IR
  llvm::StringRef Source; ///< spelling in the kernel language
  unsigned Arity;
  ResultRule Result;
  llvm::StringRef Cpp;       ///< fmt template over {0} {1} {2}
  llvm::StringRef CppScalar; ///< for a value computed once per row
  llvm::StringRef CudaF32;   ///< CUDA spelling for float/integer/bool results
  llvm::StringRef CudaF64;   ///< CUDA spelling for double results
  /// Spelling for integer results on every backend ("" = as above): `/`
  /// and `%` call pk::scalar, which never traps.
  llvm::StringRef Integer;
  OpCost Cost; ///< Costly: worth buffering over recomputing
};

const OpInfo &opInfo(OpCode C);
llvm::ArrayRef<OpInfo> allOps();
/// Looks an op up by its kernel-language spelling: "exp", "+", "unary-",
/// "where", ... Returns nullptr when the name is not an elementwise op.
const OpInfo *lookupOpBySource(llvm::StringRef Source);

/// The op that gives a value of computeType(T) as a ref of the storage-only
/// dtype T holds it: round_f16/round_bf16 (F16/BF16: an f32 rounded to 16
/// bits and back), wrap_i8/wrap_u8 (I8/U8: an i32 modulo 2^8). It is
/// cast<pk::half>, cast<int8_t>, ... and the value such a ref reads back
/// after a store.
OpCode throughStorageOp(DType T);

//===----------------------------------------------------------------------===//
// Source locations
//===----------------------------------------------------------------------===//

/// Where a node came from. `Raw` is an opaque token the frontend can turn back
/// into its own location type to report a diagnostic at the right place.
struct SrcLoc {
  unsigned Line = 0;
  unsigned Col = 0;
  uint64_t Raw = 0;
};

/// A problem in the user's kernel found below the frontend (shape mismatch
/// known at compile time, construct not supported by a lowering yet). The
/// frontend reports it as a Clang diagnostic at `Loc`. `Id` is the
/// `[pk-<id>]` tag.
struct UserDiag {
  SrcLoc Loc;
  std::string Id;
  std::string Message;
  std::string Note; ///< what to write instead ("" for none)
};

//===----------------------------------------------------------------------===//
// Symbolic extents
//===----------------------------------------------------------------------===//

using ExtentId = unsigned;
using Shape = llvm::SmallVector<ExtentId, 4>;

/// An extent expression. Extents are hash-consed in the function's
/// ExtentTable, so equal ids mean equal expressions.
struct Extent {
  enum Kind : uint8_t {
    Const,  ///< a compile-time constant `Value`
    Dim,    ///< extent `Axis` of parameter `Param` (printed `x.0`)
    Bcast,  ///< NumPy broadcast of extents `A` and `B`: A == 1 ? B : A
    Scalar, ///< the value of the integer scalar parameter `Param`
    /// `Value` + the sum of `Coef * atom` over `Terms` (window bounds such as
    /// `pos + T`, and the window extents `end - begin`): at least one term,
    /// no atom a Const or a Linear, atoms in increasing order, no zero
    /// coefficient, and not a lone atom with coefficient 1 (that is the atom).
    Linear,
    /// `Value` times the product of the atoms of `Terms`, each `Coef` times
    /// (reshape extents such as `T * H`): at least two factors, no atom a
    /// Const, Linear or Product, atoms in increasing order.
    Product,
    /// `A / B`, truncating (a `-1` extent of reshape: the size over the
    /// others). Evaluates to 0 where B is 0, which a guard then rejects.
    Quotient,
  };
  struct Term {
    int64_t Coef;
    ExtentId Atom;
    bool operator==(const Term &O) const {
      return Coef == O.Coef && Atom == O.Atom;
    }
    bool operator<(const Term &O) const {
      return std::tie(Atom, Coef) < std::tie(O.Atom, O.Coef);
    }
  };
  Kind K = Const;
  int64_t Value = 0;
  unsigned Param = 0, Axis = 0;
  ExtentId A = 0, B = 0;
  std::vector<Term> Terms; ///< Linear
};

/// Interning does not change what any existing id means, so the table is
/// logically const: passes that only read a Function may still name extents.
class ExtentTable {
public:
  ExtentId constant(int64_t V) const;
  ExtentId dim(unsigned Param, unsigned Axis) const;
  /// Simplifies: bcast(x, x) = x, bcast(1, x) = x, bcast(c, c') for
  /// constants. Does not check compatibility (see the Guards pass).
  ExtentId bcast(ExtentId A, ExtentId B) const;
  /// The value of an integer scalar parameter used as an extent.
  ExtentId scalar(unsigned Param) const;
  /// A + B and A - B, kept as linear forms over the other extents so that
  /// (pos + T) - pos is T and T - (T - 1) is 1.
  ExtentId add(ExtentId A, ExtentId B) const;
  ExtentId sub(ExtentId A, ExtentId B) const;
  /// C * A, also linear.
  ExtentId scale(ExtentId A, int64_t C) const;
  /// A * B (a constant factor keeps it linear) and A / B, simplified:
  /// constants fold, factors of B that A has cancel (x.0 * x.1 / x.0 is
  /// x.1: the guard of the reshape that makes a quotient checks B != 0).
  ExtentId mul(ExtentId A, ExtentId B) const;
  ExtentId div(ExtentId A, ExtentId B) const;
  const Extent &get(ExtentId Id) const { return Items[Id]; }
  bool isConst(ExtentId Id, int64_t V) const {
    return Items[Id].K == Extent::Const && Items[Id].Value == V;
  }
  size_t size() const { return Items.size(); }

private:
  ExtentId intern(const Extent &E) const;
  /// `Value + Σ Terms` in the normal form of Extent::Linear.
  ExtentId linear(int64_t Value, std::vector<Extent::Term> Terms) const;
  ExtentId combine(ExtentId A, int64_t SignA, ExtentId B, int64_t SignB) const;
  /// `Value * Π Terms` in the normal form of Extent::Product.
  ExtentId product(int64_t Value, std::vector<Extent::Term> Terms) const;
  mutable std::vector<Extent> Items;
  mutable std::map<
      std::pair<int64_t, std::vector<std::pair<int64_t, ExtentId>>>, ExtentId>
      LinearIndex;
  mutable std::map<
      std::tuple<int, int64_t, unsigned, unsigned, unsigned, unsigned>,
      ExtentId>
      Index;
};

//===----------------------------------------------------------------------===//
// Parameters and nodes
//===----------------------------------------------------------------------===//

/// In, Out, InOut and Scalar are the kernel's parameters; Temp is a buffer
/// pkc adds (lib/Transforms/Materialize.cpp): a value kept in memory between
/// two fused groups, which the generated code allocates per call. Window is
/// a window of a ref, `ref.slice(axis, begin, end)` (language.md §2): the
/// memory of its root parameter, addressed with the root's strides from an
/// offset.
/// Alias is a reshape of a contiguous buffer: the memory of `Parent` read
/// with other extents (lib/Transforms/BufferViews.cpp).
enum class ParamKind : uint8_t { In, Out, InOut, Scalar, Temp, Window, Alias };

/// A buffer of the kernel: one of its parameters (in signature order, first)
/// or a temporary (after them). Loads and stores address both the same way.
struct Param {
  std::string Name;
  ParamKind Kind = ParamKind::In;
  DType Type = DType::F32;
  unsigned Rank = 0; ///< 0 for scalars
  SrcLoc Loc;
  /// Temp: its extents (those of the value it holds). A parameter's extents
  /// are the symbols `Dim(param, axis)` instead (refExtent()).
  Shape TempShape;
  /// Temp: why it exists, for --emit=graph and --explain.
  std::string Why;
  /// Window: `[Begin, End)` along `WindowAxis` of the ref or window
  /// `Parent`, the other axes whole; `Root` is the kernel parameter whose
  /// memory it is. `RootOffset[k]` is where axis k starts in the root
  /// (windows of windows add up) and `TempShape` holds the window's extents.
  unsigned Parent = 0, Root = 0;
  unsigned WindowAxis = 0;
  ExtentId Begin = 0, End = 0;
  Shape RootOffset;
  /// Window, Alias: of an Out, InOut or temporary (one of an In is
  /// read-only). An Alias's extents are in TempShape, its parent in Parent;
  /// a window's Root is the buffer whose strides it uses (a parameter, a
  /// temporary or an alias).
  bool WindowWritable = false;
  bool isRef() const { return Kind != ParamKind::Scalar; }
  bool isWritable() const {
    return Kind == ParamKind::Out || Kind == ParamKind::InOut ||
           Kind == ParamKind::Temp || (isView() && WindowWritable);
  }
  /// Read through a pointer to const (an In, or a window or alias of one).
  bool isReadOnly() const {
    return Kind == ParamKind::In || (isView() && !WindowWritable);
  }
  bool isTemp() const { return Kind == ParamKind::Temp; }
  bool isWindow() const { return Kind == ParamKind::Window; }
  bool isAlias() const { return Kind == ParamKind::Alias; }
  /// Another buffer's memory: a window or an alias.
  bool isView() const { return isWindow() || isAlias(); }
  /// A parameter of the kernel's signature (not a temporary or a view).
  bool isArgument() const { return Kind != ParamKind::Temp && !isView(); }
  /// Its extents are expressions (TempShape), not symbols of its own.
  bool hasDerivedShape() const { return isTemp() || isView(); }
};

using NodeId = unsigned;

enum class NodeKind : uint8_t {
  ScalarParam, ///< value of scalar parameter `Param` (rank 0, weak)
  Const,       ///< literal (rank 0, weak when it came from a C++ literal)
  Load,        ///< whole-array read of ref parameter `Param`
  Elementwise, ///< `Op` over `Operands` (broadcast together)
  Cast,        ///< operand 0 converted to `Type`
  Reduce,      ///< `Reduction` of operand 0 over `Axes`, `KeepDims`
  View,        ///< operand 0 read through the index map `Map` (no copy)
  Index,       ///< coordinate along `Axes[0]` of each element of operand 0
  /// the extent `Ext` as an i64 value of rank 0 (`x.extent(1)`); with an
  /// operand, `v.extent(Axes[0])` of that value, which inferShapes turns
  /// into the extent (dropping the operand)
  Extent,
  MatMul, ///< matrix product of operands 0 and 1 (rank 2 or 3)
  Store,  ///< write operand 0 to ref `Param`, broadcast to its shape
  Concat, ///< the operands one after another along `Axes[0]`
  /// take(operand 0, operand 1, Axes[0]): NumPy's take. Operand 0 (the
  /// table) is a load; operand 1 (the integer indices) a load of an In ref
  /// or a scalar, checked against the table's extent at entry.
  Take,
  /// repeat(operand 0, operand 1, Axes[0]): each element of operand 0 (a
  /// load, BufferViews.cpp keeps a computed value in a temporary first)
  /// repeated operand 1 (an i64 scalar, ViewExtents[0] once shapes are
  /// known) times along the axis. Lowered as a load whose index along the
  /// axis is the loop's divided by the count.
  Repeat,
};

/// ArgMax and ArgMin (the int64 position of the first extreme along one
/// axis) live only between the frontend and expandArgReductions(), which
/// rewrites each into a Max/Min and a Min of positions: no later layer sees
/// them.
enum class ReduceKind : uint8_t { Sum, Max, Min, Mean, ArgMax, ArgMin };
llvm::StringRef reduceKindName(ReduceKind K);
inline bool isArgReduction(ReduceKind K) {
  return K == ReduceKind::ArgMax || K == ReduceKind::ArgMin;
}
/// `in`, `out`, `inout`, `scalar`, `temp`.
llvm::StringRef paramKindName(ParamKind K);

/// How a view was written. Shape inference turns it into the node's
/// IndexMap (and reports what does not fit); every pass after it reads the
/// map only.
enum class ViewKind : uint8_t {
  BroadcastTo, ///< to the shape of operand 1 (which gives only a shape)
  ExpandDims,  ///< a new extent-1 axis at `Axes[0]`
  Squeeze,     ///< remove the extent-1 axis `Axes[0]`
  Transpose,   ///< swap the last two axes
  Permute,     ///< axis i of the view is axis `Axes[i]` of the operand
  /// The operand's elements in row-major order with the extents
  /// `ViewExtents` (the one at `Axes[0]`, when it is not -1, inferred).
  Reshape,
  /// [ViewExtents[0], ViewExtents[1]) along `Axes[0]` (negative constant
  /// bounds count from the end until inferShapes normalises them).
  Slice,
};
llvm::StringRef viewKindName(ViewKind K);

/// Which element of its operand each element of a view reads: operand axis
/// k is indexed by the view's axis `Source[k]`, or by 0 where Source[k] is
/// -1 (an axis of extent 1 the view drops). As in NumPy, an operand axis of
/// extent 1 under a longer view axis is read at 0 too (stride 0), so
/// broadcasting needs no entry of its own. A view axis no entry names is a
/// new one (expand_dims, or broadcast_to's leading axes).
///
/// broadcast_to [x.0] -> [y.0, x.0]: (d1); expand_dims(v, 0) of [x.0]:
/// (d1); squeeze(v, 0) of [1, x.0]: (0, d0); transpose of [a, b]: (d1, d0);
/// permute_dims(v, {2, 0, 1}) of [a, b, c]: (d1, d2, d0).
struct IndexMap {
  llvm::SmallVector<int, 4> Source;
  /// True when operand axis k is the view's axis k + (rank - operand rank)
  /// for every k: a NumPy broadcast, which flat elementwise loops index
  /// like any other operand.
  bool isBroadcast(unsigned ViewRank) const;
  /// True when the view reads its operand unchanged (same rank, axis k is
  /// axis k): a broadcast to the operand's own rank.
  bool isIdentity(unsigned ViewRank) const;
};

/// The map of a view written as `K` of an operand of rank `OperandRank`
/// giving rank `ViewRank`; `Axis` (expand_dims, squeeze) is normalised.
IndexMap viewMap(ViewKind K, unsigned Axis, unsigned OperandRank,
                 unsigned ViewRank);

struct Node {
  explicit Node(NodeKind K) : Kind(K) {}
  NodeKind Kind;
  DType Type = DType::F32;
  Shape Sh; ///< filled by inferShapes(); empty for rank 0 and stores
  llvm::SmallVector<NodeId, 3> Operands;
  OpCode Op = OpCode::Add; ///< Elementwise
  unsigned Param = 0;      ///< ScalarParam, Load, Store
  /// Load: how many stores to the memory of the load's root parameter (its
  /// own stores and its windows') come before it in source order. A load
  /// with a version above 0 reads memory those stores wrote (a window read
  /// after a window write, language.md §2), so it runs after them; every
  /// other load reads the ref's contents at entry.
  unsigned Version = 0;
  double FloatValue = 0; ///< Const of float type
  int64_t IntValue = 0;  ///< Const of integer or bool type
  bool Weak = false;     ///< scalar that takes the array's float type
  ReduceKind Reduction = ReduceKind::Sum;
  llvm::SmallVector<int, 2> Axes;        ///< as written (may be negative)
  ExtentId Ext = 0;                      ///< Extent: which one
  ViewKind View = ViewKind::BroadcastTo; ///< View: how it was written
  IndexMap Map; ///< View: filled by inferShapes() (or by the pass adding it)
  /// Reshape: the extents (the inferred one a placeholder), from its scalar
  /// operands 1.. (a literal -1 at Axes[0]); Slice: begin and end, from
  /// operands 1 and 2; the Repeat node: the count, from operand 1. inferShapes
  /// fills them; BufferViews.cpp turns both views into buffers.
  Shape ViewExtents;
  bool KeepDims = false;
  /// A readable name: the local variable or ref it was bound to, or "".
  std::string Name;
  /// What the user wrote, for messages ("x[_] * x[_]"), possibly shortened.
  std::string Label;
  SrcLoc Loc;
  bool Dead = false; ///< removed by a pass; skipped by everyone

  bool isStore() const { return Kind == NodeKind::Store; }
  unsigned rank() const { return Sh.size(); }
};

/// A run-time shape condition checked once at kernel entry, before any write.
struct Guard {
  enum Kind : uint8_t {
    Fits,    ///< extent A can broadcast to extent B (A == B || A == 1)
    Equal,   ///< extents A and B are equal (matmul's K, squeezed axes)
    NonZero, ///< extent A is not 0 (max/min of an empty axis)
    /// reshape of NodeA (A elements) into NodeB's `List` (B elements): every
    /// extent of List >= 0 and, with an inferred extent (`Infer`, the
    /// product of List must then be nonzero and divide A), A == B.
    Reshape,
    /// concat: extents A and B of two parts agree (`Axis` from the end).
    Concat,
    /// take: every index of NodeB (an In ref's load or a scalar) lies in
    /// [0, A), A the extent of the table NodeA along `Axis` (B == A). Checked
    /// by a pass over the indices (pk::rt::check_take), not a condition on
    /// extents.
    Indices,
    /// slice of a value along `Axis`: 0 <= A <= B <= List[0] (A, B the
    /// bounds, List[0] the operand NodeA's extent). Derived before dead
    /// values are dropped, so a slice whose value no store uses is checked
    /// as eager code checks it.
    Slice,
    /// repeat of NodeA: the count A is >= 0 (A == B).
    Repeat,
  };
  Kind K;
  ExtentId A, B;
  NodeId NodeA, NodeB; ///< for the message: whose shapes to print
  int Axis;            ///< counted from the end (-1 = last), for the message
  SrcLoc Loc;
  std::vector<ExtentId> List = {}; ///< Reshape: the extents as written
  int Infer = -1; ///< Reshape: the position of the -1 in List, or -1
};

/// The function template whose explicit instantiation a kernel is
/// (Function::Template): what the CUDA header needs to declare the launcher
/// template that each instantiation's launcher specializes.
struct KernelTemplate {
  std::string Name; ///< unqualified: "scale"
  std::string Head; ///< its template parameters: "typename T, int R"
  /// Per kernel parameter, its type written with the template parameters
  /// ("pk::In<T, R>"); "" where it does not depend on them (it is then the
  /// instantiation's own type).
  std::vector<std::string> ParamTypes;
};

/// A kernel in Graph IR.
struct Function {
  std::string Name;          ///< unqualified, e.g. "rmsnorm"
  std::string QualifiedName; ///< e.g. "ns::rmsnorm"
  /// Names the generated CUDA kernels (pk_<Symbol>_g<N>) when another kernel
  /// of the same file has the same Name (overloads, other namespaces); empty
  /// means Name.
  std::string Symbol;
  std::string File; ///< main source file, for comments
  SrcLoc Loc;
  std::vector<Param> Params; ///< in signature order
  std::vector<Node> Nodes;   ///< SSA order; stores keep program order
  ExtentTable Extents;
  std::vector<Guard> Guards; ///< filled by the Guards pass
  /// Set for an explicit instantiation (or specialization) of a kernel
  /// template; Name is then "scale<float>", and Symbol is set.
  std::optional<KernelTemplate> Template;

  const Node &node(NodeId Id) const { return Nodes[Id]; }
  Node &node(NodeId Id) { return Nodes[Id]; }
};

//===----------------------------------------------------------------------===//
// Building (used by the frontend and the unit tests)
//===----------------------------------------------------------------------===//

/// Appends nodes to a Function. Shapes are not computed here (inferShapes()).
class Builder {
public:
  explicit Builder(Function &F) : F(F) {}
  unsigned addParam(llvm::StringRef Name, ParamKind K, DType T, unsigned Rank,
                    SrcLoc Loc = {});
  NodeId scalarParam(unsigned Param, SrcLoc Loc = {});
  /// The run-time value of an extent: an i64 of rank 0, uniform like a
  /// scalar parameter. A constant extent folds to a constant.
  NodeId extentValue(ExtentId E, SrcLoc Loc = {});
  NodeId constFloat(double V, DType T, bool Weak, SrcLoc Loc = {});
  NodeId constInt(int64_t V, DType T, bool Weak, SrcLoc Loc = {});
  NodeId load(unsigned Param, SrcLoc Loc = {});
  /// `Result` is the dtype the eager header gives the expression. Operands
  /// must already have the dtype the op computes in (see Ops.def). When every
  /// operand is a Const, the result is folded into a Const.
  NodeId elementwise(OpCode Op, llvm::ArrayRef<NodeId> Operands, DType Result,
                     SrcLoc Loc = {});
  /// Folds casts of constants; returns V itself when it already has type T.
  NodeId cast(NodeId V, DType T, SrcLoc Loc = {});
  NodeId reduce(ReduceKind K, NodeId V, llvm::ArrayRef<int> Axes, bool KeepDims,
                DType Result, SrcLoc Loc = {});
  /// The views: View nodes whose IndexMap inferShapes() fills in.
  NodeId broadcastTo(NodeId V, NodeId ShapeOf, SrcLoc Loc = {});
  NodeId expandDims(NodeId V, int Axis, SrcLoc Loc = {});
  NodeId squeeze(NodeId V, int Axis, SrcLoc Loc = {});
  NodeId transpose(NodeId V, SrcLoc Loc = {});
  /// permute_dims(v, {Axes...}), the axes as written (inferShapes checks
  /// and normalises them).
  NodeId permuteDims(NodeId V, llvm::ArrayRef<int> Axes, SrcLoc Loc = {});
  /// reshape(v, {extents}): the extents are i64 scalar values; `Infer` is
  /// the position of a literal -1 or -1.
  NodeId reshape(NodeId V, llvm::ArrayRef<NodeId> Extents, int Infer,
                 SrcLoc Loc = {});
  /// slice(v, axis, begin, end) of a value; the bounds are i64 scalars.
  NodeId slice(NodeId V, int Axis, NodeId Begin, NodeId End, SrcLoc Loc = {});
  /// v.extent(axis) of a value: its extent once shapes are known.
  NodeId extentOf(NodeId V, int Axis, SrcLoc Loc = {});
  NodeId concat(llvm::ArrayRef<NodeId> Parts, int Axis, SrcLoc Loc = {});
  NodeId take(NodeId Table, NodeId Indices, int Axis, SrcLoc Loc = {});
  /// repeat(v, count, axis): the count an i64 scalar value.
  NodeId repeat(NodeId V, NodeId Count, int Axis, SrcLoc Loc = {});
  NodeId index(NodeId V, int Axis, SrcLoc Loc = {});
  NodeId matmul(NodeId A, NodeId B, DType Result, SrcLoc Loc = {});
  NodeId store(unsigned Param, NodeId V, SrcLoc Loc = {});

  /// Returns the value of a Const node (after folding), or nullopt. The
  /// frontend uses it for `if`/loop conditions and axes.
  std::optional<double> constValue(NodeId Id) const;

  /// Names a value after the local variable it is bound to (first one wins).
  void setName(NodeId Id, llvm::StringRef Name);
  void setLabel(NodeId Id, llvm::StringRef Label);

private:
  NodeId add(Node N);
  /// A node of kind K over Operands along Axis, typed like operand 0
  /// (concat, take, repeat).
  NodeId alongAxis(NodeKind K, llvm::ArrayRef<NodeId> Operands, int Axis,
                   SrcLoc Loc);
  Function &F;
};

//===----------------------------------------------------------------------===//
// Walking
//===----------------------------------------------------------------------===//

/// The operands whose elements a node reads: a broadcast view's second
/// operand and index's operand only give a shape.
llvm::ArrayRef<NodeId> valueOperands(const Node &N);

/// What a reduce or matmul node reduces: values of rank `Rank` over `Axes`
/// (normalised, sorted). matmul(a, b) of rank n is the sum over the last
/// axis of the rank-(n+1) products. Nodes with one signature can share a
/// loop nest (docs/design.md, "Fusion").
struct ReduceSignature {
  unsigned Rank = 0;
  std::vector<unsigned> Axes;
  bool operator==(const ReduceSignature &O) const {
    return Rank == O.Rank && Axes == O.Axes;
  }
  bool operator<(const ReduceSignature &O) const {
    return std::tie(Rank, Axes) < std::tie(O.Rank, O.Axes);
  }
};
ReduceSignature reduceSignature(const Function &F, const Node &N);

/// What a walk over a cone does after visiting a node.
enum class Walk : uint8_t {
  Operands, ///< go on into the node's value operands
  Skip,     ///< do not walk through this node
  Stop,     ///< end the whole walk
};

/// Visits every node the values `Roots` are computed from (the roots
/// included) once, depth first through value operands (valueOperands());
/// `Visit` says whether to walk on through each node. Returns false when a
/// visit stopped the walk. Every walk of a value's cone in the passes is
/// this one.
bool walkCone(const Function &F, llvm::ArrayRef<NodeId> Roots,
              llvm::function_ref<Walk(NodeId, const Node &)> Visit);

/// The live nodes whose values `Roots` are computed from (the roots
/// included), walking value operands and stopping at loads: one fused
/// group recomputes all of them. In SSA order.
std::vector<NodeId> cone(const Function &F, llvm::ArrayRef<NodeId> Roots);

//===----------------------------------------------------------------------===//
// Printing and verification
//===----------------------------------------------------------------------===//

/// `x.0`, `128`, `bcast(a.0, b.0)`.
std::string extentToString(const Function &F, ExtentId E);
/// The text of a linear extent `E` (`hi - lo`, `x.0 + 2*pos - 3`: positive
/// terms first), each atom spelled by `Atom`, a coefficient joined to its
/// atom by `Times`. Both the IR printer and the emitters use it.
std::string formatLinear(const Extent &E,
                         llvm::function_ref<std::string(ExtentId)> Atom,
                         llvm::StringRef Times);
/// Extent `Axis` of buffer `Param`: the symbol `Dim(Param, Axis)` of a
/// parameter, the stored value's extent of a temporary, `end - begin` or
/// the parent's extent of a window.
ExtentId refExtent(const Function &F, unsigned Param, unsigned Axis);
/// Every extent of buffer `Param`.
Shape refShape(const Function &F, unsigned Param);
/// The kernel parameter or temporary whose memory buffer `Param` is (through
/// windows and aliases), else the buffer itself.
unsigned rootOf(const Function &F, unsigned Param);
/// The extent a rank-0 integer value computes when it is a sum, difference,
/// product or quotient of integer constants, scalar parameters and extents
/// (window bounds, reshape extents), or nullopt. Extent nodes of values must
/// have been resolved (inferShapes).
std::optional<ExtentId> scalarExtent(const Function &F, NodeId V);
/// True when buffer `Param` is row-major contiguous: not a window, or a
/// window (of windows) along axis 0 only of a contiguous buffer.
bool isContiguous(const Function &F, unsigned Param);

/// `[x.0, x.1]`.
std::string shapeToString(const Function &F, llvm::ArrayRef<ExtentId> S);

/// How the source spells a parameter: its name, or for a window
/// `h.slice(0, pos, pos + 1)` (through its parents).
std::string paramSpelling(const Function &F, unsigned Param);
/// The readable text form used by `--emit=graph`. `GroupOf`, when given,
/// maps node ids to fusion group ids printed beside each node.
void print(const Function &F, llvm::raw_ostream &OS,
           const llvm::DenseMap<NodeId, unsigned> *GroupOf = nullptr);
/// Checks structural invariants (operand order, arities, dtypes of ops,
/// params of loads/stores). Returns "" when valid, else the first problem.
/// A failure is a compiler bug, not a user error.
std::string verify(const Function &F);

} // namespace pk::ir

#endif // PK_IR_GRAPHIR_H
