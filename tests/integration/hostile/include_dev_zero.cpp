// expect: compile_error
// within: 20
// Includes /dev/zero through a macro (the screen refuses `#include </dev/zero>` written out): the preprocessor reads an endless file of zeros and grows without bound
// (the compiler had no memory limit, only the 180 s watchdog, by which time it held gigabytes).
// The compile now has memory, time and output limits and sees no device but /dev/null.
#include <lathe/abi.h>
#define ZEROS </dev/zero>
#include ZEROS
extern "C" int lathe_launch(const lathe_args*) { return 0; }
