/* lathe kernel ABI, version 1.
 *
 * A kernel is a shared object that exports, with C linkage:
 *   int    lathe_launch(const lathe_args* args);           required; 0 = success
 *   size_t lathe_workspace_bytes(const lathe_args* args);  optional; default 0
 *   int    lathe_init(void);                               optional; once per load, not timed
 * and the ABI tag `lathe_abi_version`, which this header defines (weak, so several translation
 * units of one bundle may include it). lathe refuses an object without the tag or with another
 * version: a kernel built against another layout of lathe_args would read garbage.
 *
 * Rules (checked by the gate, see PROTOCOL.md):
 *  - inputs are never written; outputs are preallocated and poisoned: write every element;
 *  - tensors do not alias, are 256-byte aligned, contiguous row-major unless the task says so;
 *  - scalars come in the task's declared order;
 *  - on CUDA, lathe_launch only enqueues work on `stream`: no allocation, no synchronization,
 *    no host-device copies (so it can be captured in a CUDA graph);
 *  - no I/O, no timers, no processes, no environment: the gate screens for them and the worker
 *    runs without them.
 * DLPack 0.6 has no bool or fp8 codes: bool is kDLUInt 8-bit until the ABI says otherwise. */
#ifndef LATHE_ABI_H
#define LATHE_ABI_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#define LATHE_ABI_VERSION 1u

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lathe_args {
  uint32_t abi_version; /* LATHE_ABI_VERSION */
  const DLTensor* inputs;
  int32_t num_inputs; /* never written */
  DLTensor* outputs;
  int32_t num_outputs; /* preallocated, poisoned; write every element */
  const double* scalars;
  int32_t num_scalars; /* task scalars, declared order */
  void* workspace;
  size_t workspace_bytes;
  void* stream; /* cudaStream_t on CUDA, NULL on CPU */
  char* error;
  size_t error_bytes; /* optional message on failure */
} lathe_args;

#if defined(_WIN32)
#define LATHE_EXPORT __declspec(dllexport)
#else
#define LATHE_EXPORT __attribute__((visibility("default")))
#endif

/* The ABI tag. Weak so that every translation unit of a bundle may include this header. */
#ifdef __cplusplus
LATHE_EXPORT __attribute__((weak)) extern const uint32_t lathe_abi_version = LATHE_ABI_VERSION;
#else
LATHE_EXPORT __attribute__((weak)) const uint32_t lathe_abi_version = LATHE_ABI_VERSION;
#endif

LATHE_EXPORT int lathe_launch(const lathe_args* args);
LATHE_EXPORT size_t lathe_workspace_bytes(const lathe_args* args);
LATHE_EXPORT int lathe_init(void);

/* Trusted references (tasks/<name>/reference.*) export this instead of lathe_launch: the same
 * arguments, but every output tensor is float64 (kDLFloat, 64 bits) of the output's shape. */
LATHE_EXPORT int lathe_reference(const lathe_args* args);

#ifdef __cplusplus
}
#endif

#endif /* LATHE_ABI_H */
