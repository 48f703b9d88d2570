// A kernel in a header: pkc rewrites only the files it is given, so this
// definition stays eager (the .pk.cpp includes the same header), and says so.
#include <pk/pk.h>
PK_KERNEL void from_header(pk::In<float> x, pk::Out<float> o) { o[_] = x[_]; } // expected-warning {{the kernel 'from_header' is defined in an included file, which pkc does not rewrite: it runs eagerly and gets no CUDA launcher [pk-included-kernel]}} expected-note {{define it in the file given to pkc, and only declare it in the header}}
