// Constant tables (language.md §4): a const or constexpr array of numbers is
// a table indexed by constants. What stays an error: an index that is not a
// compile-time constant, an index out of range, a table that is not const or
// whose elements are not constants, arrays of anything but numbers, static
// state. (What works: frontend/tables.cpp, e2e/kernels/tables_and_templates.cpp.)
// RUN: %pkc %s -- %pkflags -ferror-limit=0 -Xclang -verify
#include <pk/pk.h>

#include <array>
using namespace pk::lang;

float mutable_global[2] = {1, 2};

PK_KERNEL void scalar_index(In<float> x, Out<float> o, int k) {
  const float c[3] = {1, 2, 3};
  o[_] = x[_] * c[k]; // expected-error {{the table 'c' is indexed by 'k', which depends on the scalar parameter 'k'; a table's index must be a compile-time constant [pk-subscript]}} expected-note {{index it by a constant expression (a literal, a constexpr value or the counter of an unrolled loop); to choose per element, use where(mask, a, b)}}
}

PK_KERNEL void computed_index(In<float> x, Out<float> o, int k) {
  constexpr std::array<float, 3> c = {1, 2, 3};
  int j = k % 3;
  o[_] = x[_] * c[j]; // expected-error {{the table 'c' is indexed by 'j', which depends on the scalar parameter 'k'}} expected-note {{index it by a constant expression}}
}

PK_KERNEL void past_the_end(In<float> x, Out<float> o) {
  const float c[3] = {1, 2, 3};
  for (int i = 0; i <= 3; ++i)
    o[_] = x[_] * c[i]; // expected-error {{the index 3 is out of range for the table 'c' of 3 elements [pk-subscript]}} expected-note {{index it from 0 to 2}}
}

PK_KERNEL void negative(In<float> x, Out<float> o) {
  constexpr std::array<double, 2> c = {1, 2};
  int i = -1;
  o[_] = x[_] * c[i]; // expected-error {{the index -1 is out of range for the table 'c' of 2 elements [pk-subscript]}} expected-note {{index it from 0 to 1}}
}

PK_KERNEL void row_past_the_end(In<float> x, Out<float> o) {
  constexpr float m[2][2] = {{1, 2}, {3, 4}};
  int i = 1, j = 2;
  o[_] = x[_] * m[i][j]; // expected-error {{the index 2 is out of range for the table 'm[1]' of 2 elements [pk-subscript]}} expected-note {{index it from 0 to 1}}
}

PK_KERNEL void not_const(In<float> x, Out<float> o) {
  float c[2] = {1, 2}; // expected-error {{the array 'c' is not const; a local array in a kernel is a constant table [pk-unsupported]}} expected-note {{a local array is a table of constants: declare it const or constexpr with constant elements (constexpr float c[] = {1.0f, 0.5f};) and index it by constants; compute arrays from refs with pk operations}}
  o[_] = x[_] * c[0];
}

PK_KERNEL void not_const_std_array(In<float> x, Out<float> o) {
  std::array<float, 2> c = {1, 2}; // expected-error {{the array 'c' is not const; a local array in a kernel is a constant table [pk-unsupported]}} expected-note {{declare it const or constexpr}}
  o[_] = x[_] * c[0];
}

PK_KERNEL void scalar_element(In<float> x, Out<float> o, float s) {
  const float c[2] = {1, s}; // expected-error {{the array 'c' is not a constant table: its element 's' depends on the scalar parameter 's' [pk-unsupported]}} expected-note {{a local array is a table of constants}}
  o[_] = x[_] * c[0];
}

PK_KERNEL void array_of_refs(In<float> x, Out<float> o) {
  const In<float> r[1] = {x}; // expected-error {{the C array 'r' of type 'const In<float>[1]' is not supported in a kernel [pk-unsupported]}} expected-note {{a local array is a table of constants}}
  o[_] = x[_];
}

PK_KERNEL void static_state(In<float> x, Out<float> o) {
  static float c[2] = {1, 2}; // expected-error {{the static local variable 'c' is not supported in a kernel [pk-unsupported]}} expected-note {{kernels keep no state between calls; a static constexpr array is a constant table}}
  o[_] = x[_] * c[0];
}

PK_KERNEL void mutable_table(In<float> x, Out<float> o) {
  o[_] = x[_] * mutable_global[0]; // expected-error {{reading the global variable 'mutable_global' is not supported in a kernel [pk-unsupported]}} expected-note {{pass it as a parameter, or make it a constexpr constant}}
}
