// <pk/pk.h> is not the first directive: pkc parses the file in full.
#include <cstdint>
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void late(In<float> x, Out<float> y) { y[_] = x[_] - 1.0f; }
