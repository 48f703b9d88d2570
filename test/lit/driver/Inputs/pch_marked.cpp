// A kernel file whose second kernel exists only when <pk/pk.h> defines
// PK_TEST_MARKER (pch.test appends it to a copy of the header).
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void plain(In<float> x, Out<float> y) { y[_] = x[_] + 1.0f; }

#ifdef PK_TEST_MARKER
PK_KERNEL void marked(In<float> x, Out<float> y) { y[_] = x[_] * 3.0f; }
#endif
