// Runs the compiled kernel (linked through pk_add_kernels) and the eager one
// (the same source included after <pk/pk.h>) and compares them.
#include <pk/pk.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace eager {
#include "kernels/scale_rows.cpp"
}

void scale_rows(pk::In<float, 2> x, pk::Out<float, 2> y);

int main() {
  const int64_t R = 37, D = 129;
  std::vector<float> X(R * D), E(R * D), C(R * D);
  for (int64_t I = 0; I < R * D; ++I)
    X[I] = std::sin(0.37f * float(I)) * float(I % 7 + 1);
  eager::scale_rows({X.data(), {R, D}}, {E.data(), {R, D}});
  scale_rows({X.data(), {R, D}}, {C.data(), {R, D}});
  for (int64_t I = 0; I < R * D; ++I)
    if (E[I] != C[I]) {
      std::printf("mismatch at %lld: eager %g compiled %g\n", (long long)I,
                  double(E[I]), double(C[I]));
      return 1;
    }
  std::printf("external project: compiled scale_rows agrees with eager on "
              "[%lld, %lld]\n",
              (long long)R, (long long)D);
  return 0;
}
