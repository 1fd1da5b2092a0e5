// The worker's system-call filter (PROTOCOL.md, trust boundary): once installed, the process
// cannot write or create files, start processes, open sockets, signal or inspect other processes,
// or lift its resource limits; doing so kills it with SIGSYS (lathe: worker_end::forbidden).
#pragma once

#include <string>

namespace lathe::worker {

// Installs the filter on every thread of the calling process. Empty on success, else the reason.
// With `guarded_fd` >= 0 that descriptor also stays what it is: closing it (close, close_range
// over it) or duplicating another onto it (dup2, dup3) kills the process. The Python worker's
// record of the torch operations a candidate runs goes through it (gate/cpu/op_record.h).
std::string install_seccomp(int guarded_fd = -1);

}  // namespace lathe::worker
