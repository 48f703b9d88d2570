// A header that defines a kernel (rather than declaring it).
#pragma once
#include <pk/pk.h>

PK_KERNEL inline void add_one(pk::In<float> x, pk::Out<float> y) {
  y[pk::lang::_] = x[pk::lang::_] + 1.0f;
}
