// Calls a compiled kernel (its declaration, as a user writes it) with a ref
// of the wrong rank: ranks are part of the ref's type, so this is a
// compile-time error, whichever compiler builds the caller.
#include <pk/ref.h>

#include <vector>

void softmax(pk::In<float, 2> x, pk::Out<float, 2> y);

void call(std::vector<float> &X, std::vector<float> &Y) {
  pk::In<float, 1> Flat(X.data(), {12});
  softmax(Flat, {Y.data(), {3, 4}});
}

// The same for a read-only ref where the kernel writes.
void call_in_as_out(std::vector<float> &X, const std::vector<float> &Y) {
  softmax({X.data(), {3, 4}}, pk::In<float, 2>(Y.data(), {3, 4}));
}
