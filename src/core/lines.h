// Text split into lines: the one splitter every layer uses (the edit format, the feature
// detectors, diffs, a Python kernel's knobs, tool output), each of which once had its own copy.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace lathe {

// Whether split_lines drops the '\r' that ends a line written with CRLF.
enum class carriage_return : uint8_t { kept, dropped };

// The lines of `text`, split on '\n' (not kept): a final '\n' ends the last line and starts no
// other, so empty text has no lines and "a\n\nb" has three. Views into `text`.
std::vector<std::string_view> split_lines(std::string_view text, carriage_return cr = carriage_return::kept);

}  // namespace lathe
