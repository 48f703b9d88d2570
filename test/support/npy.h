//===- npy.h - NumPy .npy files and JSON strings for test dumps -----------===//
//
// The tests that hand their data to a NumPy oracle (the fuzz driver's --dump,
// the samples' PK_ORACLE_DUMP) write arrays as .npy files (format 1.0,
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html) and
// describe them in a small JSON file. Header-only: each test links nothing
// more.
//
//===----------------------------------------------------------------------===//
#ifndef PK_TEST_SUPPORT_NPY_H
#define PK_TEST_SUPPORT_NPY_H

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pk_test {

/// Writes the row-major array at `Data` (`Shape`, elements of `ElemBytes`
/// bytes, NumPy type `Descr` such as "<f4") to `Path` as a .npy file.
inline void writeNpy(const std::string &Path, const char *Descr,
                     size_t ElemBytes, const std::vector<int64_t> &Shape,
                     const void *Data) {
  std::string Dims;
  for (int64_t E : Shape)
    Dims += std::to_string(E) + (Shape.size() == 1 ? "," : ", ");
  if (Shape.size() > 1)
    Dims.resize(Dims.size() - 2);
  std::string H = std::string("{'descr': '") + Descr +
                  "', 'fortran_order': False, 'shape': (" + Dims + "), }";
  // magic (6), version (2), header length (2), header, '\n': a multiple
  // of 64 bytes
  H.append((64 - (10 + H.size() + 1) % 64) % 64, ' ');
  H += '\n';
  int64_t N = 1;
  for (int64_t E : Shape)
    N *= E;
  std::ofstream F(Path, std::ios::binary);
  F.write("\x93NUMPY\x01\x00", 8);
  const unsigned char Len[2] = {static_cast<unsigned char>(H.size() & 0xFF),
                                static_cast<unsigned char>(H.size() >> 8)};
  F.write(reinterpret_cast<const char *>(Len), 2);
  F.write(H.data(), std::streamsize(H.size()));
  F.write(static_cast<const char *>(Data),
          std::streamsize(size_t(N) * ElemBytes));
  if (!F)
    throw std::runtime_error("cannot write " + Path);
}

/// `S` as a JSON string literal (quotes, backslashes and control characters
/// escaped).
inline std::string jsonString(const std::string &S) {
  std::string Out = "\"";
  for (unsigned char Ch : S) {
    if (Ch == '"' || Ch == '\\') {
      Out += '\\';
      Out += char(Ch);
    } else if (Ch < 0x20) {
      char Esc[8];
      std::snprintf(Esc, sizeof Esc, "\\u%04x", Ch);
      Out += Esc;
    } else {
      Out += char(Ch);
    }
  }
  return Out + "\"";
}

} // namespace pk_test

#endif // PK_TEST_SUPPORT_NPY_H
