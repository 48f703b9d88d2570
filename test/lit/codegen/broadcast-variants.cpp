// Eight inputs whose extents are symbols of their own may each broadcast
// along either axis at run time: 2^16 combinations. pkc does not write a
// loop per combination: one flat loop when every input has the output's
// shape (checked once at entry), else one strided loop whose strides are 0
// where an extent is 1; each threaded above the work threshold or serial.
// Four loop nests in all, whatever the number of inputs (issue [program]:
// run-time alternatives are capped).
// RUN: %pkc --emit=cpp %s -- %pkflags | FileCheck %s
// RUN: %pkc --emit=loop %s -- %pkflags | FileCheck %s --check-prefix=LOOP
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void many_broadcasts(In<float, 2> a, In<float, 2> b, In<float, 2> c,
                               In<float, 2> d, In<float, 2> e, In<float, 2> f,
                               In<float, 2> g, In<float, 2> h,
                               Out<float, 2> y) {
  y[_] = a[_] + b[_] * c[_] - d[_] + e[_] * f[_] + g[_] - h[_];
}

// LOOP: step 0: group 0
// LOOP-NOT: fused if
// LOOP: a_v = load a[i0?, i1?] : f32
// LOOP: h_v = load h[i0?, i1?] : f32
// LOOP: store y[i0, i1],

// CHECK: if (pk_a_0 == pk_y_0 && pk_a_1 == pk_y_1 && {{.*}} && pk_h_0 == pk_y_0 && pk_h_1 == pk_y_1) {
// CHECK-COUNT-2: for (int64_t pk_i = 0; pk_i < pk_n; ++pk_i) {
// CHECK: } else {
// CHECK: const int64_t pk_h_s1 = (pk_h_1 == 1 ? 0 : 1);
// CHECK-COUNT-2: for (int64_t pk_i0 = 0; pk_i0 < pk_y_0; ++pk_i0) {
// CHECK-NOT: for (int64_t pk_i0 =
// CHECK-NOT: for (int64_t pk_i =
// CHECK: // the body of many_broadcasts
