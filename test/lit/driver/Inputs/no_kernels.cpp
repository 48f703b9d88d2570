// A kernel file without any PK_KERNEL (yet): ordinary C++ only.
#include <pk/pk.h>

int twice(int v) { return 2 * v; }

int main() { return twice(0); }
