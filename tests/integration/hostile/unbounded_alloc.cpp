// expect: resource_limit
#include <lathe/abi.h>
#define X_ static_cast<const float*>(a->inputs[0].data)
#define Y_ static_cast<const float*>(a->inputs[1].data)
#define Z_ static_cast<float*>(a->outputs[0].data)
#define N_ a->inputs[0].shape[0]
#define S_ static_cast<float>(a->scalars[0])
#include <cstdlib>
#include <cstring>
extern "C" int lathe_launch(const lathe_args* a) {
  for (;;) { char* p = static_cast<char*>(std::malloc(64 << 20)); if (!p) { *(volatile char*)p = 1; } std::memset(p, 1, 64 << 20); }
}
