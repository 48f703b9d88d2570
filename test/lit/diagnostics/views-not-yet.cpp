// The gathers and arg-reductions of language.md §3 run in eager code
// (test/unit/ViewsTest.cpp) but pkc does not compile them yet (the views and
// windows it does: frontend/windows.test, frontend/reshapes.test):
// each is a [pk-not-supported-yet] error at its call with one note that says
// so.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void embed(In<float, 2> table, In<int32_t, 1> ids, Out<float, 2> y) {
  y[_] = take(table[_], ids[_], 0); // expected-error {{'take' is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{take, argmax and argmin run in eager code (<pk/pk.h>) but are not compiled yet; call this kernel eagerly, without pk_add_kernels, until they are}}
}

PK_KERNEL void greedy(In<float, 2> logits, Out<int64_t, 1> tok) {
  tok[_] = argmax(logits[_], -1); // expected-error {{'argmax' is not supported by pkc yet}} expected-note {{not compiled yet}}
}
