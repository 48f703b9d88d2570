//===- AttentionPattern.h - Recognising attention in Graph IR ---*- C++ -*-===//
//
// softmax(S) V, with S an elementwise function of Q Kᵀ (scale, causal or
// other masks, biases), written the NumPy way:
//
//   e = exp(s - max(s, -1, keepdims));  o = matmul(e / sum(e, -1, keepdims), v)
//
// is one fused group: per query row an online softmax over the keys
// (FlashAttention's recurrence), so no [T, S] matrix is ever stored. This
// file finds the pattern; LowerToLoops builds the nest.
//
//===----------------------------------------------------------------------===//
#ifndef PK_IR_ATTENTIONPATTERN_H
#define PK_IR_ATTENTIONPATTERN_H

#include "IR/GraphIR.h"

#include <optional>

namespace pk::ir {

struct AttentionMatch {
  NodeId Store = 0;
  NodeId QK = 0;    ///< matmul(q, kᵀ): [batch?, t, s]
  NodeId Score = 0; ///< s: the elementwise function of QK softmax runs over
  NodeId Max = 0, Sum = 0;
  NodeId PV = 0; ///< matmul(e / sum(e), v): [batch?, t, j]
};

/// The pattern when the value stored by `Store` is attention as above (the
/// stored value is the PV matmul itself, float32 or float64).
std::optional<AttentionMatch> matchAttention(const Function &F, NodeId Store);

} // namespace pk::ir

#endif // PK_IR_ATTENTIONPATTERN_H
