// The arg-reductions of language.md §3 run in eager code
// (test/unit/ViewsTest.cpp) but pkc does not compile them yet (the views and
// windows it does: frontend/windows.test, frontend/reshapes.test, and take:
// frontend/take.test):
// each is a [pk-not-supported-yet] error at its call with one note that says
// so.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void greedy(In<float, 2> logits, Out<int64_t, 1> tok) {
  tok[_] = argmax(logits[_], -1); // expected-error {{'argmax' is not supported by pkc yet}} expected-note {{not compiled yet}}
}
