// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;
#include "Inputs/included-kernel.h"

PK_KERNEL void local(In<float> x, Out<float> o) { o[_] = x[_]; }
