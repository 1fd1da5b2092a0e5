// expect: compile_error|forbidden
// secret: yes
// Reads a file the kernel has no business reading into its own object: an `.incbin` in
// top-level assembly, with `asm` spelled by token pasting so that the screen's search for inline
// assembly does not see it, and returns the file's first bytes as its error message, so that they
// reach lathe's output and store. The assembler now runs where only the bundle and the system
// headers can be read. @SECRET@ is a file the test writes.
#include <lathe/abi.h>
#include <cstdio>
#define PASTE(a, b) a##b
#define ASSEMBLE PASTE(as, m)
ASSEMBLE(".section .rodata\n.globl lathe_found\nlathe_found:\n.incbin \"@SECRET@\"\n.byte 0\n.previous");
extern "C" const char lathe_found[];
extern "C" int lathe_launch(const lathe_args* a) {
  std::snprintf(a->error, a->error_bytes, "found: %.64s", lathe_found);
  return 1;
}
