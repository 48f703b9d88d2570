// Constructs a kernel cannot contain: each is reported at its location and
// names the construct.
// RUN: %pkc %s -- %pkflags -ferror-limit=0 -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void pointer(In<float> x, Out<float> o, float s) {
  float *p = &s; // expected-error {{the pointer variable 'p' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels have no pointers; read refs with ref[_]}}
  o[_] = x[_];
}

PK_KERNEL void address(In<float> x, Out<float> o, float s) {
  o[_] = x[_] * *&s; // expected-error {{dereferencing a pointer ('*') is not supported in a kernel [pk-unsupported]}} expected-note {{kernels have no pointers}}
}

PK_KERNEL void heap(In<float> x, Out<float> o) {
  delete new int(1); // expected-error {{'delete' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels are straight-line code}}
  o[_] = x[_];
}

PK_KERNEL void jump(In<float> x, Out<float> o) {
  o[_] = x[_];
  goto done; // expected-error {{'goto' is not supported in a kernel [pk-unsupported]}} expected-note {{use structured control flow}}
done:        // expected-error {{a label is not supported in a kernel [pk-unsupported]}} expected-note {{kernels have no goto}}
  return;
}

PK_KERNEL void exceptions(In<float> x, Out<float> o) {
  try { // expected-error {{'try' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels cannot throw or catch}}
    o[_] = x[_];
  } catch (...) {
  }
}

PK_KERNEL void thrower(In<float> x, Out<float> o) {
  o[_] = x[_];
  throw 2; // expected-error {{'throw' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels cannot throw}}
}

PK_KERNEL void lambda(In<float> x, Out<float> o) {
  auto f = [](auto v) { return v * 2.0f; }; // expected-error {{the lambda 'f' is not supported in a kernel [pk-unsupported]}} expected-note {{write a helper function; it is inlined}}
  o[_] = x[_];
}

PK_KERNEL void call_lambda(In<float> x, Out<float> o) {
  o[_] = [&] { return x[_] * 2.0f; }(); // expected-error {{calling a lambda is not supported in a kernel [pk-unsupported]}} expected-note {{write a helper function; it is inlined}}
}

PK_KERNEL void counter(In<float> x, Out<float> o) {
  static int calls = 0; // expected-error {{the static local variable 'calls' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels keep no state between calls}}
  static constexpr float kTwo = 2.0f; // a constant: fine
  o[_] = x[_] * kTwo;
}

struct Params {
  float scale;
};
PK_KERNEL void member(In<float> x, Out<float> o) {
  Params p{2.0f}; // expected-error {{the local variable 'p' of type 'Params' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels hold pk arrays}}
  o[_] = x[_];
}

float g_scale = 2.0f;
PK_KERNEL void global(In<float> x, Out<float> o) {
  o[_] = x[_] * g_scale; // expected-error {{reading the global variable 'g_scale' is not supported in a kernel [pk-unsupported]}} expected-note {{pass it as a parameter, or make it a constexpr constant}}
}

auto fact(auto v, int n) -> decltype(v) {
  if (n <= 1)
    return v;
  return fact(v * float(n), n - 1); // expected-error {{the recursive call to 'fact' is not supported in a kernel [pk-unsupported]}} expected-note {{helpers are inlined, so they cannot recurse}}
}
PK_KERNEL void recursion(In<float> x, Out<float> o) { o[_] = fact(x[_], 3); }

PK_KERNEL void asm_block(In<float> x, Out<float> o) {
  asm("nop"); // expected-error {{inline assembly is not supported in a kernel [pk-unsupported]}} expected-note {{kernels are straight-line code}}
  o[_] = x[_];
}

PK_KERNEL void assign_ref(In<float> x, Out<float> o, Out<float> p) {
  p[_] = x[_];
  o = p; // expected-error {{assigning to the ref 'o' itself is not supported in a kernel [pk-unsupported]}} expected-note {{store into its elements with 'o[_] = ...'}}
}

PK_KERNEL void local_ref(In<float> x, Out<float> o) {
  Out<float> alias = o; // expected-error {{the local ref variable 'alias' is not supported in a kernel [pk-unsupported]}} expected-note {{use the kernel's parameter directly, or pass it to a helper}}
  o[_] = x[_];
}

PK_KERNEL void ref_to_local(In<float> x, Out<float> o) {
  auto t = x[_];
  auto &r = t; // expected-error {{the reference 'r' to another local is not supported in a kernel [pk-unsupported]}} expected-note {{copy the value: auto r = t;}}
  o[_] = t;
}

void bump(float &v) { v = v + 1.0f; } // expected-error {{assigning through the reference 'v' is not supported in a kernel [pk-unsupported]}} expected-note {{return the new value from the helper instead}}
PK_KERNEL void out_param(In<float> x, Out<float> o, float s) {
  bump(s);
  o[_] = x[_] * s;
}

struct Kernels {
  PK_KERNEL void method(In<float> x, Out<float> o) { o[_] = x[_]; } // expected-error {{the kernel 'Kernels::method' is a member function; a kernel must be a free function [pk-unsupported]}} expected-note {{declare it at namespace scope}}
};

PK_KERNEL void text(In<float> x, Out<float> o) {
  const char *msg = "hello"; // expected-error {{the pointer variable 'msg' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels have no pointers}}
  o[_] = x[_];
}
