// broadcast_to, expand_dims, squeeze and transpose are one Graph IR node, a
// view: `view.<as written>` with an index map that gives, per axis of the
// operand, the view's index that reads it (0 for an extent-1 axis the view
// drops). Every pass after shape inference reads the map only.
// RUN: %pkc --emit=graph %s -- %pkflags | FileCheck %s
#include <pk/pk.h>
using namespace pk::lang;

// CHECK-LABEL: func @views(
// CHECK:      [[X:%[0-9]+]] = load x : f32[x.0, x.1]
// CHECK-NEXT: [[E:%[0-9]+]] = view.expand_dims [[X]] axis=1 (d0, d2) : f32[x.0, 1, x.1]
// CHECK-NEXT: [[S:%[0-9]+]] = view.squeeze [[E]] axis=-2 (d0, 0, d1) : f32[x.0, x.1]
// CHECK:      [[B:%[0-9]+]] = load b : f32[b.0]
// CHECK-NEXT: view.broadcast_to [[B]], [[X]] (d1) : f32[x.0, x.1]
// CHECK:      view.transpose [[X]] (d1, d0) : f32[x.1, x.0]
PK_KERNEL void views(In<float, 2> x, In<float, 1> b, Out<float, 2> o,
                     Out<float, 2> t) {
  o[_] = squeeze(expand_dims(x[_], 1), -2) + broadcast_to(b[_], x);
  t[_] = transpose(x[_]);
}

// Common-subexpression elimination tells views of one operand apart by
// their maps, not only by the axis written.
// CHECK-LABEL: func @two_views_one_axis(
// CHECK:      view.expand_dims [[X2:%[0-9]+]] axis=0 (d1, d2) : f32[1, x.0, x.1]
// CHECK:      view.squeeze [[X2]] axis=0 (0, d0) : f32[x.1]
PK_KERNEL void two_views_one_axis(In<float, 2> x, Out<float, 3> e,
                                  Out<float, 1> s) {
  e[_] = expand_dims(x[_], 0);
  s[_] = squeeze(x[_], 0);
}
