// toml++'s implementation, compiled once for every library that reads TOML (lathe_spec, lathe_llm,
// a rules test). Header-only, each of the four translation units that include it compiled the
// whole parser again: toml++ is used in its "compiled library" mode instead (TOML_HEADER_ONLY=0
// everywhere, TOML_IMPLEMENTATION here), still from Debian's headers alone, so the GPU machine
// needs no shared library.
#define TOML_IMPLEMENTATION 1
#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif
