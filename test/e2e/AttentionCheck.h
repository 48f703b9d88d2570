//===- AttentionCheck.h - One head of attention against its bound -*- C++
//-*-===//
//
// expectAttention: eager and compiled attention outputs checked against each
// other and against a double reference within MatmulBounds.h's derived
// per-row bound, and the bound shown to reject the output without each
// row's last visible key. Used by the matmul tests and the attention
// samples' tests (attention_causal, kv_cache_attention).
//
//===----------------------------------------------------------------------===//

#ifndef PK_TEST_ATTENTION_CHECK_H
#define PK_TEST_ATTENTION_CHECK_H

#include "MatmulBounds.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

/// One head of an attention call (MatmulBounds.h): compiled within the
/// derived bound of eager in every row, each of them within it of the double
/// reference, and the reference without each row's last visible key outside
/// it in at least 90% of the rows with two keys or more.
template <class E>
void expectAttention(const attention_bound::Head<E> &H, const E *Eager,
                     const E *Compiled, const std::string &What) {
  using namespace attention_bound;
  const std::vector<double> Tol = rowBounds(H), Ref = reference(H);
  const std::vector<int64_t> Drop = lastKeys(H);
  const std::vector<double> Dropped = reference(H, Drop);
  int64_t Rows = 0, Rejected = 0;
  for (int64_t R = 0; R < H.T; ++R) {
    const double Errors[] = {rowError(Eager, Compiled, R, H.J),
                             rowError(Eager, Ref, R, H.J),
                             rowError(Compiled, Ref, R, H.J)};
    const char *Names[] = {"eager and compiled", "eager and the reference",
                           "compiled and the reference"};
    for (int X = 0; X < 3; ++X)
      if (!(Errors[X] <= Tol[R])) {
        ADD_FAILURE() << What << " row " << R << ": " << Names[X]
                      << " differ by " << Errors[X] << " (tolerance " << Tol[R]
                      << ")";
        return;
      }
    if (Drop[R] >= 0) {
      ++Rows;
      Rejected += rowError(Dropped, Eager, R, H.J) > Tol[R];
    }
  }
  EXPECT_GE(Rejected * 10, Rows * 9)
      << What << ": the bound accepts the output without a key in "
      << Rows - Rejected << " of " << Rows << " rows";
}

#endif // PK_TEST_ATTENTION_CHECK_H
