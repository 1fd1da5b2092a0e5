#include "core/target.h"

#include <algorithm>

namespace lathe {

bool has_capability(const target& t, const std::string& cap) {
  // Linear: the list is sorted by contract, but a hand-built target may not be, and it is short.
  return std::find(t.capabilities.begin(), t.capabilities.end(), cap) != t.capabilities.end();
}

int x86_level(const std::string& arch) {
  // The psABI micro-architecture levels; "x86-64" is the baseline (level 1).
  if (arch == "x86-64" || arch == "x86-64-v1") return 1;
  if (arch == "x86-64-v2") return 2;
  if (arch == "x86-64-v3") return 3;
  if (arch == "x86-64-v4") return 4;
  return -1;
}

}  // namespace lathe
