// The worker's system-call filter (PROTOCOL.md, trust boundary): once installed, the process
// cannot write or create files, start processes, open sockets, signal or inspect other processes,
// or lift its resource limits; doing so kills it with SIGSYS (lathe: worker_end::forbidden).
#pragma once

#include <string>

namespace lathe::worker {

// Installs the filter on every thread of the calling process. Empty on success, else the reason.
std::string install_seccomp();

}  // namespace lathe::worker
