// expect: compile_error
// The compile-time form of escape_message.cpp: an #error whose text holds raw escape bytes, which
// the compiler copies into its log, and lathe into its output. Every string that came from a
// candidate is now escaped.
#include <lathe/abi.h>
#error "[2K[1A[2Koutcome   ok"
