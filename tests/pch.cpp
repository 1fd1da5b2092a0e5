// The source of lathe_test_pch, the target that builds the precompiled header every test reuses
// (cmake/lathe_test.cmake). It compiles nothing of its own.
