#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void from_value(In<float, 2> t, In<int32_t> ids, Out<float, 2> y) {
  y[_] = take(t[_] * 2.0f, ids[_], 0);
}
PK_KERNEL void computed_ids(In<float, 2> t, In<int32_t> ids, Out<float, 2> y) {
  y[_] = take(t[_], ids[_] + 1, 0);
}
PK_KERNEL void written_ids(In<float, 2> t, InOut<int32_t> ids, Out<float, 2> y) {
  y[_] = take(t[_], ids[_], 0);
}
PK_KERNEL void bad_axis(In<float, 2> t, In<int32_t> ids, Out<float, 2> y) {
  y[_] = take(t[_], ids[_], 2);
}
