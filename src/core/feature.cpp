#include "core/feature.h"

namespace lathe {

const char* to_string(detection_method m) {
  switch (m) {
    case detection_method::source:
      return "source";
    case detection_method::ptx:
      return "ptx";
    case detection_method::sass:
      return "sass";
    case detection_method::disassembly:
      return "disassembly";
    case detection_method::proposer_audit:
      return "proposer_audit";
  }
  return "?";
}

}  // namespace lathe
