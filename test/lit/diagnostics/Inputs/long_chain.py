"""Writes a kernel whose one expression is a chain of N additions."""
import sys

n = int(sys.argv[1])
print("#include <pk/pk.h>")
print("using namespace pk::lang;")
print("PK_KERNEL void chain(In<float, 1> x, Out<float, 1> y) {")
print("  y[_] = " + " + ".join(["x[_]"] * n) + ";")
print("}")
