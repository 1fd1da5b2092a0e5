// expect: load_error
#include <stdint.h>
extern "C" const uint32_t lathe_abi_version = 2;
extern "C" int lathe_launch(const void*) { return 0; }
