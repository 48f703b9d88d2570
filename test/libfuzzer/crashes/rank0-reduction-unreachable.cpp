// Finding (docs/sanitizers-and-fuzzing.md): a reduction of a rank-0 value
// reaches llvm_unreachable("node kind not lowered to loops") in
// LowerToLoops.cpp (UB in a Release build). Replay:
//   pkc --emit=cpp rank0-reduction-unreachable.cpp -- -std=c++20 -I include
//   pk-frontend-fuzzer rank0-reduction-unreachable.cpp
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void k(In<float, 0> x, Out<float, 0> y) { y[_] = sum(x[_]); }
