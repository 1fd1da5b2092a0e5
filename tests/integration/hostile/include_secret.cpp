// expect: compile_error|forbidden
// secret: yes
// Includes a file only root may read. The compiler ran as root, so the file's first line came
// back in the compiler's error ("expected unqualified-id before ..."), and with it into lathe's
// output, the store and a proposer's repair prompt. The compiler now runs as an unprivileged
// user that sees only the bundle and the system headers. @SECRET@ is the file the test writes.
#include <lathe/abi.h>
#define SECRET_FILE "@SECRET@"
#include SECRET_FILE
extern "C" int lathe_launch(const lathe_args*) { return 0; }
