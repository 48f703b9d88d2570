// Not C++: Clang's own error, before pkc sees any kernel.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void broken(In<float> x, Out<float> y) { y[_] = x[_] + ; }
