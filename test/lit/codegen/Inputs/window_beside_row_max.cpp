// A window store fused into a row kernel (found by fuzz seed 102, k27 of
// 2026-12-04): the window's rows are parts of the ref's, so they are not
// streamed; pkc used to emit `pk::rt::stream_stores(o_w.size() ...)`, a name
// that does not exist.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void window_beside_row_max(In<float, 2> x, In<float, 0> c,
                                     Out<float, 1> m, Out<float, 2> o,
                                     int64_t s) {
  m[_] = c[_] * squeeze(max(x[_], 1, keepdims), -1);
  o.slice(1, s, s + 1)[_] = c[_];
}
