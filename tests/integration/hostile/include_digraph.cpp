// expect: forbidden|compile_error
// include_macro.cpp spelled with the `%:` digraph of `#`, which the screen did not read as a
// directive, and computes with the reference's own code. The compile now sees only the bundle
// and the system headers (a Landlock domain; where there is none, the compiler's dependency
// list is checked), so it cannot. The path is filled in by the test.
#include <lathe/abi.h>
%:include "@SOURCE@/tests/integration/tasks/axpy/reference.cpp"
#include <vector>
#define NAMED(x) lathe_##x
extern "C" int lathe_launch(const lathe_args* a) {
  const int64_t n = a->inputs[0].shape[0];
  std::vector<double> out(n);
  DLTensor t = a->outputs[0];
  t.dtype.bits = 64;
  t.data = out.data();
  lathe_args b = *a;
  b.outputs = &t;
  NAMED(reference)(&b);
  float* z = static_cast<float*>(a->outputs[0].data);
  for (int64_t i = 0; i < n; ++i) z[i] = static_cast<float>(out[i]);
  return 0;
}
