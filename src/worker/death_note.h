// A last word from a dying worker: when the kernel dies of a fatal signal with its address space
// (RLIMIT_AS) nearly used up, the classic "malloc until NULL, then write through NULL", lathe
// cannot see the peak any more (a dead process has no /proc/<pid>/status, and untouched pages
// never show in the resident peak). The handler reads its own VmPeak and, when it is at least
// half the limit, writes a reply with sandbox::death_note_magic before dying of the same signal.
#pragma once

namespace lathe::worker {

// Installs handlers for SIGSEGV, SIGBUS, SIGABRT, SIGFPE and SIGILL on an alternate stack.
void install_death_note(int reply_fd);

}  // namespace lathe::worker
