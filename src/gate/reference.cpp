#include "gate/reference.h"

#include "spec/problem.h"

#include <dlfcn.h>

#include <string>

namespace lathe::gate {

void reference::closer::operator()(void* h) const {
  if (h) dlclose(h);
}

result<reference> reference::load(const std::filesystem::path& object) {
  void* h = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return fail(errc::io_error, std::string("cannot load the reference: ") + dlerror());
  reference r;
  r.handle_ = std::shared_ptr<void>(h, closer{});
  r.fn_ = reinterpret_cast<int (*)(const lathe_args*)>(dlsym(h, "lathe_reference"));
  if (!r.fn_) return fail(errc::parse_error, "the reference does not export lathe_reference()");
  return r;
}

reference reference::of_problem(std::shared_ptr<problem_oracle> oracle) {
  reference r;
  r.problem_ = std::move(oracle);
  return r;
}

result<void> reference::compute(const lathe_args& args) const {
  if (!fn_) return fail(errc::internal, "a problem's reference draws its own inputs (make_trial)");
  const int rc = fn_(&args);
  if (rc != 0)
    return fail(errc::internal, "the reference failed (" + std::to_string(rc) + "): " +
                                    std::string(args.error ? args.error : ""));
  return {};
}

}  // namespace lathe::gate
