// rope: rotary position embeddings of T tokens at positions pos..pos+T-1, in
// both of the forms models use. Each pair of features (a, b) of a head of hs
// features is turned by the angle (pos + t) * theta^(-2i / hs):
//   rope_half:        Hugging Face's rotate_half, on x [T, H, hs]: the pairs
//                     are (i, i + hs/2), q * cos + rotate_half(q) * sin;
//   rope_interleaved: llama2.c's, on x [T, H * hs]: the pairs are (2i, 2i+1),
//                     through a reshape to [T, H, hs/2, 2].
// Both are slices of a value, elementwise math and a concat; pkc compiles
// them into loops over temporaries it sizes from the extents.
#include <pk/pk.h>
using namespace pk::lang;

PK_KERNEL void rope_half(In<float, 3> x, Out<float, 3> y, int64_t pos,
                         float theta) {
  auto hs = x.extent(2);
  auto a = slice(x[_], 2, 0, hs / 2), b = slice(x[_], 2, hs / 2, hs);
  auto t = cast<float>(index(a, 0) + pos);
  auto i = cast<float>(index(a, 2));
  auto angle = t * (1.0f / pow(theta, 2.0f * i / hs));
  auto c = cos(angle), s = sin(angle);
  y[_] = concat({a * c - b * s, b * c + a * s}, 2);
}

PK_KERNEL void rope_interleaved(In<float, 2> x, Out<float, 2> y, int64_t pos,
                                int64_t heads, float theta) {
  auto T = x.extent(0), hs = x.extent(1) / heads;
  auto pairs = reshape(x[_], {T, heads, hs / 2, 2});
  auto a = slice(pairs, 3, 0, 1), b = slice(pairs, 3, 1, 2); // [T,H,hs/2,1]
  auto t = cast<float>(index(a, 0) + pos);
  auto i = cast<float>(index(a, 2));
  auto angle = t * (1.0f / pow(theta, 2.0f * i / hs));
  auto c = cos(angle), s = sin(angle);
  y[_] = reshape(concat({a * c - b * s, a * s + b * c}, 3), {T, -1});
}
