// expect: timeout
// Never finishes: the watchdog ends the worker.
#include <lathe/abi.h>
#define N_ args->inputs[0].shape[0]
#define X_ static_cast<const float*>(args->inputs[0].data)
#define Y_ static_cast<const float*>(args->inputs[1].data)
#define Z_ static_cast<float*>(args->outputs[0].data)
#define S_ static_cast<float>(args->scalars[0])
#define STREAM_ static_cast<cudaStream_t>(args->stream)
#define GRID_ static_cast<unsigned>((N_ + 255) / 256), 256, 0, STREAM_
__global__ void k(volatile int* flag) { while (*flag != 12345) {} }  // the poison is never 12345
extern "C" int lathe_launch(const lathe_args* args) { k<<<1, 1, 0, STREAM_>>>((volatile int*)Z_); return 0; }
