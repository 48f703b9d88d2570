// exp of a value minus its own row max is exp of an argument <= 0: pkc calls
// pk::vm::exp_nonpos there (exp-nonpos.test), plain pk::vm::exp elsewhere.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void shifted_by_own_max(In<float, 2> x, Out<float, 2> y) {
  y[_] = exp(x[_] - max(x[_], -1, keepdims));
}

PK_KERNEL void shifted_by_other_max(In<float, 2> x, In<float, 2> z,
                                    Out<float, 2> y) {
  y[_] = exp(x[_] - max(z[_], -1, keepdims));
}

PK_KERNEL void max_minus_value(In<float, 2> x, Out<float, 2> y) {
  y[_] = exp(max(x[_], -1, keepdims) - x[_]);
}

PK_KERNEL void shifted_by_own_min(In<double, 2> x, Out<double, 2> y) {
  y[_] = exp(x[_] - min(x[_], -1, keepdims));
}

PK_KERNEL void double_shifted_by_own_max(In<double, 2> x, Out<double, 2> y) {
  y[_] = exp(x[_] - max(x[_], -1, keepdims));
}
