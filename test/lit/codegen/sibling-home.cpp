// A value kept in a buffer for a later group and also stored whole into an
// output ref is written once, into the ref: the ref is the buffer's home
// (lib/Transforms/PlanBuffers.cpp, docs/design.md "An output ref as a
// temporary's home"). The nest that computes it stores only the ref, and the
// later group reads the ref's memory whenever the two have the same extents
// (a store may broadcast: the choice is made at run time). Not homed: a ref
// that is read in the kernel, stored twice, or of another dtype.
// RUN: %pkc --emit=loop %s -- %pkflags | FileCheck %s --check-prefix=LOOP
// RUN: %pkc --emit=cpp %s -- %pkflags | FileCheck %s --check-prefix=CPP
// RUN: %pkc --explain %s -- %pkflags | FileCheck %s --check-prefix=EXPLAIN
#include <pk/pk.h>
using namespace pk::lang;
// The CHECK lines are matched whole:
// clang-format off

PK_KERNEL void keep_hidden(In<float, 2> x, In<float, 2> w1, In<float, 2> w2,
                           Out<float, 2> h, Out<float, 2> y) {
  auto act = maximum(matmul(x[_], transpose(w1[_])), 0.0f);
  h[_] = act;
  y[_] = matmul(act, transpose(w2[_]));
}
// LOOP-LABEL: loops @keep_hidden {
// LOOP: buffer act_buf : f32[x.0, w1.0] temp, steps 0..1, workspace slot 0; or in h if x.0 == h.0 && w1.0 == h.1
// LOOP: step 0: group 0 fused if h.0 == x.0 && h.1 == w1.0
// LOOP-NEXT: nest 0 for
// LOOP-NOT: store act_buf
// LOOP: store h[i0, i1], act
// LOOP-NEXT: }
// The alternative, when h broadcasts act: act_buf has a nest of its own.
// LOOP-NEXT: else unfused {
// LOOP: store act_buf[i0, i1]
// LOOP: store h[i0, i1]
// LOOP: step 1: group 1
// LOOP: load act_buf

// CPP-LABEL: pk_keep_hidden_cpu
// CPP: // act_buf is computed in h's memory when they have the same extents.
// CPP-NEXT: const bool pk_act_buf_in_h = pk_act_buf_0 == pk_h_0 && pk_act_buf_1 == pk_h_1;

// EXPLAIN-LABEL: kernel keep_hidden
// EXPLAIN: act_buf: f32[x.0, w1.0], 4 bytes per element; written by group 0, read by group 1; in h's memory when their extents are equal (no copy), else workspace slot 0

// h is also read (an InOut updated in place): its old values must not be
// overwritten early, so the activation keeps a buffer of its own.
PK_KERNEL void hidden_read_too(In<float, 2> x, In<float, 2> w1,
                               In<float, 2> w2, InOut<float, 2> h,
                               Out<float, 2> y, Out<float, 2> z) {
  auto act = maximum(matmul(x[_], transpose(w1[_])), 0.0f);
  z[_] = h[_] * 2.0f;
  h[_] = act;
  y[_] = matmul(act, transpose(w2[_]));
}
// LOOP-LABEL: loops @hidden_read_too {
// LOOP: buffer act_buf : f32[x.0, w1.0] temp, steps {{[0-9.]+}}, workspace slot 0{{$}}
// LOOP: store act_buf[i0, i1]

// Stored as double: the ref holds other bytes than the buffer.
PK_KERNEL void hidden_as_double(In<float, 2> x, In<float, 2> w1,
                                In<float, 2> w2, Out<double, 2> h,
                                Out<float, 2> y) {
  auto act = maximum(matmul(x[_], transpose(w1[_])), 0.0f);
  h[_] = cast<double>(act);
  y[_] = matmul(act, transpose(w2[_]));
}
// LOOP-LABEL: loops @hidden_as_double {
// LOOP: buffer act_buf : f32[x.0, w1.0] temp, steps {{[0-9.]+}}, workspace slot 0{{$}}
// LOOP: store act_buf[i0, i1]
