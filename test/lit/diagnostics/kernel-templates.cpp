// Kernel templates (language.md §4): each explicit instantiation is a
// kernel. An implicit instantiation is not compiled (it runs eagerly): a
// warning says so and its note gives the explicit instantiation to write.
// Errors in a template's body name the instantiation; what pkc cannot
// spell yet in a kernel template's signature is [pk-not-supported-yet].
// (What works: driver/kernel-templates.test, e2e/kernels/kernel_templates.cpp.)
// RUN: %pkc %s -- %pkflags -ferror-limit=0 -Xclang -verify
#include <pk/pk.h>
using namespace pk::lang;

template <typename T> PK_KERNEL void scale(In<T> x, Out<T> y, T a) {
  y[_] = x[_] * a;
}
template void scale<float>(In<float>, Out<float>, float);

namespace ns {
template <typename T, int R> PK_KERNEL void twice(In<T, R> x, Out<T, R> y) {
  y[_] = x[_] + x[_];
}
} // namespace ns

void host(In<int32_t> x, Out<int32_t> y, In<double, 2> u, Out<double, 2> v) {
  scale(x, y, 3); // expected-warning {{the kernel template 'scale' is instantiated implicitly here; pkc compiles only explicit instantiations, so this one runs eagerly [pk-implicit-instantiation]}} expected-note {{instantiate it explicitly to compile it: template void scale<int>(pk::In<int, 1>, pk::Out<int, 1>, int);}}
  scale<float>; // expected-warning {{expression result unused}}
  ns::twice(u, v); // expected-warning {{the kernel template 'twice' is instantiated implicitly here}} expected-note {{instantiate it explicitly to compile it: template void ns::twice<double, 2>(pk::In<double, 2>, pk::Out<double, 2>);}}
}

// An error in the body: reported once, with a note per instantiation.
template <typename T> PK_KERNEL void indexed(In<T> x, Out<T> y) {
  y[_] = x[1]; // expected-error {{only 'ref[_]' (the whole array) can be indexed, not 'x[1]' [pk-subscript]}} expected-note {{index the whole array with ref[_]}}
}
template void indexed<float>(In<float>, Out<float>); // expected-note {{in the explicit instantiation 'indexed<float>' here}}
template void indexed<double>(In<double>, Out<double>); // expected-note {{in the explicit instantiation 'indexed<double>' here}}

template <typename... Ts> // expected-error {{the template parameter pack 'Ts' of the kernel template 'pack' is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{give a kernel template type parameters and integer parameters only (template <typename T, int R>)}}
PK_KERNEL void pack(In<float> x, Out<float> y) {
  y[_] = x[_];
}
template void pack<int>(In<float>, Out<float>);

template <typename T> struct Traits {
  using type = T;
};
template <typename T>
PK_KERNEL void traits(In<typename Traits<T>::type> x, Out<T> y) { // expected-error {{the parameter type 'In<typename Traits<T>::type>' of the kernel template 'traits' is not supported by pkc yet [pk-not-supported-yet]}} expected-note {{write a kernel template's parameters as In<T, R>, Out<T, R>, InOut<T, R> or T, with T and R its template parameters, or as types that do not depend on them}}
  y[_] = x[_];
}
template void traits<float>(In<float>, Out<float>);

template <typename, int N> PK_KERNEL void unnamed(In<float> x, Out<float> y) {
  y[_] = x[_] * float(N);
}
template void unnamed<float, 1>(In<float>, Out<float>);
template void unnamed<double, 1>(In<float>, Out<float>); // expected-error {{this explicit instantiation differs from an earlier one of the kernel template 'unnamed' only in unnamed template parameters, which pkc cannot tell apart yet [pk-not-supported-yet]}} expected-note {{name the template parameters of 'unnamed'}}
