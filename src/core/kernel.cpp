#include "core/kernel.h"

namespace lathe {

const char* to_string(language l) {
  switch (l) {
    case language::cpp:
      return "cpp";
    case language::cuda:
      return "cuda";
    case language::python:
      return "python";
  }
  return "?";
}

}  // namespace lathe
