// embedding: the rows of a token embedding table for a batch of token ids,
// NumPy's take. pkc compiles it into one loop that reads each row where it
// lies (no copy of the table), after checking every id against the table's
// rows at entry: an id outside [0, vocab) is a pk::ShapeError before any
// write, in eager and compiled code alike.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void embedding(In<float, 2> table, In<int32_t> ids, Out<float, 2> x) {
  x[_] = take(table[_], ids[_], 0);
}
