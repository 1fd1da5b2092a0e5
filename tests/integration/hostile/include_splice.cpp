// expect: forbidden|compile_error
// include_macro.cpp with the directive split by a backslash-newline (`#inc\` and `lude` on the
// next line), which the screen read as two lines and the compiler as one. The compile now sees
// only the bundle and the system headers, so it cannot read the reference. The path is filled in
// by the test.
#include <lathe/abi.h>
#inc\
lude "@SOURCE@/tests/integration/tasks/axpy/reference.cpp"
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
