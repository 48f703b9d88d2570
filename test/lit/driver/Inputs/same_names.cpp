// Kernels of one file that share a name: overloads, and kernels in other
// namespaces with other parameters. Their CUDA launchers are overloads of
// pk::cuda::scale; their __global__ functions get distinct names.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void scale(In<float> x, Out<float> y, float s) { y[_] = x[_] * s; }
PK_KERNEL void scale(In<float> x, Out<float> y, int k) {
  y[_] = x[_] * float(k);
}
namespace f64 {
PK_KERNEL void scale(In<double> x, Out<double> y, double s) { y[_] = x[_] * s; }
} // namespace f64
// A kernel whose name is the one pkc would pick for the second scale.
PK_KERNEL void scale_2(In<float> x, Out<float> y) { y[_] = x[_] * 2.0f; }
