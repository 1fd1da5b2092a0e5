// "Did you mean": the known name closest to a mistyped verb, flag or task name (issue 24, item 8).
#pragma once

#include <string>
#include <vector>

namespace lathe::cli {

// The name of `known` closest to `word` by edit distance (insertions, deletions, substitutions,
// adjacent transpositions), when it is close enough to be a typo (at most 2 edits, and fewer than
// half the word); empty otherwise.
std::string closest_name(const std::string& word, const std::vector<std::string>& known);

}  // namespace lathe::cli
