#include "core/evaluation.h"

namespace lathe {

const char* to_string(timing_method m) {
  switch (m) {
    case timing_method::wall: return "wall";
    case timing_method::events: return "events";
    case timing_method::graph: return "graph";
  }
  return "?";
}

const char* to_string(trial_site s) { return s == trial_site::device ? "device" : "host"; }

const char* to_string(tensor_path p) { return p == tensor_path::cuda_ipc ? "cuda_ipc" : "host"; }

}  // namespace lathe
