// The top-k task's CPU oracle (tasks/topk_cuda/reference.cpp), built as the gate builds a
// reference (-O3 -fopenmp: its rows go to every core) and called through the ABI, against a plain
// implementation written here: per row, every column ordered by the float's total order (-0 below
// +0, -inf lowest, +inf highest), ties by the lower column, the first K. Rows full of ties, signed
// zeros and infinities, K = 1 and K = C; more rows than threads, so the split over rows is used.
#include <gtest/gtest.h>
#include <dlfcn.h>
#include <lathe/abi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <vector>

#include "gate/build.h"
#include "spec/bundle.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

// The float order the task's contract states, as a sortable integer.
uint32_t order_key(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

DLTensor tensor(void* data, DLDataType type, int64_t* shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = 2;
  t.dtype = type;
  t.shape = shape;
  return t;
}

class topk_reference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tc = gate::detect_toolchain(fs::path(LATHE_SOURCE_DIR) / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    auto b = load_bundle(fs::path(LATHE_SOURCE_DIR) / "tasks/topk_cuda/reference.cpp");
    ASSERT_TRUE(b) << b.error().message;
    const fs::path cache = fs::path(LATHE_BINARY_DIR) / "tests" / "gate" / "topk-reference-cache";
    auto built = gate::build(*b, "x86-64-v2", *tc, cache, gate::build_kind::reference);
    ASSERT_TRUE(built && built->ok) << (built ? built->log : built.error().message);
    handle_ = dlopen(built->object.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    reference_ = reinterpret_cast<int (*)(const lathe_args*)>(dlsym(handle_, "lathe_reference"));
    ASSERT_NE(reference_, nullptr);
  }

  // The oracle's V and I for x [R, C], K per row.
  static void run(const std::vector<float>& x, int64_t R, int64_t C, int64_t K,
                  std::vector<double>& v, std::vector<double>& ix) {
    v.assign(R * K, NAN);
    ix.assign(R * K, -1);
    int64_t xs[2] = {R, C}, os[2] = {R, K};
    const DLTensor in = tensor(const_cast<float*>(x.data()), {kDLFloat, 32, 1}, xs);
    DLTensor out[2] = {tensor(v.data(), {kDLFloat, 64, 1}, os), tensor(ix.data(), {kDLFloat, 64, 1}, os)};
    char error[256] = "";
    lathe_args a{};
    a.abi_version = LATHE_ABI_VERSION;
    a.inputs = &in;
    a.num_inputs = 1;
    a.outputs = out;
    a.num_outputs = 2;
    a.error = error;
    a.error_bytes = sizeof error;
    ASSERT_EQ(reference_(&a), 0) << error;
  }

  static inline void* handle_ = nullptr;
  static inline int (*reference_)(const lathe_args*) = nullptr;
};

TEST_F(topk_reference, every_row_is_its_k_largest_by_the_total_order_ties_to_the_lower_column) {
  std::mt19937 rng(7);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -1.0f};
  struct shape {
    int64_t R, C, K;
    int distinct;  // values drawn from this many levels (ties), 0: continuous
  };
  for (const shape s : {shape{257, 64, 5, 0}, shape{130, 33, 33, 0}, shape{64, 40, 1, 3},
                        shape{97, 128, 17, 4}, shape{33, 7, 7, 2}}) {
    std::vector<float> x(s.R * s.C);
    std::normal_distribution<float> n;
    std::uniform_int_distribution<int> level(0, std::max(s.distinct - 1, 0)), pick(0, 40);
    for (auto& e : x) {
      e = s.distinct ? static_cast<float>(level(rng)) : n(rng);
      if (const int p = pick(rng); p < 6) e = specials[p];  // signed zeros and infinities too
    }
    std::vector<double> v, ix;
    run(x, s.R, s.C, s.K, v, ix);
    for (int64_t r = 0; r < s.R; ++r) {
      std::vector<int64_t> cols(s.C);
      std::iota(cols.begin(), cols.end(), 0);
      const float* xr = x.data() + r * s.C;
      std::stable_sort(cols.begin(), cols.end(),
                       [&](int64_t a, int64_t b) { return order_key(xr[a]) > order_key(xr[b]); });
      for (int64_t j = 0; j < s.K; ++j) {
        ASSERT_EQ(ix[r * s.K + j], static_cast<double>(cols[j]))
            << "R " << s.R << " C " << s.C << " K " << s.K << " row " << r << " place " << j;
        const double want = xr[cols[j]];
        const double got = v[r * s.K + j];
        ASSERT_TRUE(got == want && std::signbit(got) == std::signbit(want))
            << "row " << r << " place " << j << ": " << got << " vs " << want;
      }
    }
  }
}

}  // namespace
