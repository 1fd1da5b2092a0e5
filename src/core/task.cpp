#include "core/task.h"

namespace lathe {

const char* to_string(platform p) {
  switch (p) {
    case platform::cpu:
      return "cpu";
    case platform::cuda:
      return "cuda";
  }
  return "?";
}

const char* to_string(task_role r) {
  switch (r) {
    case task_role::source:
      return "source";
    case task_role::heldout:
      return "heldout";
  }
  return "?";
}

const char* to_string(distribution_kind k) {
  switch (k) {
    case distribution_kind::uniform:
      return "uniform";
    case distribution_kind::normal:
      return "normal";
    case distribution_kind::integers:
      return "integers";
    case distribution_kind::constant:
      return "constant";
  }
  return "?";
}

const char* to_string(comparison_kind k) {
  switch (k) {
    case comparison_kind::elementwise:
      return "elementwise";
    case comparison_kind::sorted_set:
      return "sorted_set";
  }
  return "?";
}

}  // namespace lathe
