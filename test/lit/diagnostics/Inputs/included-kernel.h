// A kernel in a header: pkc compiles only the kernels of the files it is
// given, and says so.
#include <pk/pk.h>
PK_KERNEL void from_header(pk::In<float> x, pk::Out<float> o) { o[_] = x[_]; } // expected-warning {{kernel in an included file is not compiled; pass}}
