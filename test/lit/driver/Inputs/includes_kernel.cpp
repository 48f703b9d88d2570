// A kernel file that includes a header defining a kernel.
#include "kernel_header.h"
using namespace pk::lang;

PK_KERNEL void negate(In<float> x, Out<float> y) { y[_] = -x[_]; }
