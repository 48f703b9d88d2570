// Clang's own error, whose notes point into <pk/pk.h>: with the
// precompiled header the parse is redone without it, so the notes read as
// they would without the cache.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void wrong(In<float> x, Out<float> y) { y[_] = matmul(x[_], 3); }
