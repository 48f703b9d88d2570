// Row sums and column sums of one matrix: two reductions over different
// axes cannot share a loop nest.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void row_and_column_sums(In<float, 2> x, Out<float> rows,
                                   Out<float> cols) {
  rows[_] = sum(x[_], 1);
  cols[_] = sum(x[_], 0);
}
