// Kernels that pkc cannot place in its outputs: a body written by a macro
// (the rewrite needs the braces in the file), and two kernels whose CUDA
// launchers would be one function (launchers are pk::cuda::<name>, without
// the namespace). Kernels of one file that share a name otherwise compile
// (overloads; other namespaces with other parameters): see
// driver/same-name-kernels.test.
// RUN: %pkc %s -- %pkflags -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

#define WHOLE_KERNEL(name) \
  PK_KERNEL void name(In<float> x, Out<float> y) { y[_] = x[_]; }

WHOLE_KERNEL(copy) // expected-error {{the body of the kernel 'copy' comes from a macro, so pkc cannot rewrite it [pk-unsupported]}} expected-note {{write the kernel's braces in the source file}}

namespace a {
PK_KERNEL void twice(In<float> x, Out<float> y) { y[_] = x[_] * 2.0f; } // expected-note {{rename one of them}}
} // namespace a
namespace b {
PK_KERNEL void twice(In<float> x, Out<float> y) { y[_] = x[_] + x[_]; } // expected-error {{the kernels 'a::twice' and 'b::twice' would have the same CUDA launcher pk::cuda::twice (launchers are named without the kernel's namespace) [pk-unsupported]}}
} // namespace b
