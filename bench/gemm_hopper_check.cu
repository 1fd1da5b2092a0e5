// Bring-up check of the Hopper gemm_cuda kernels (stage5_wgmma, stage6_tma_ws) on the GPU
// machine, outside the gate: inputs with known patterns whose wrong results say what went wrong
// (which operand's layout, which edge), then random inputs against an fp64 host reference.
// Not part of the build; the gate (`lathe eval tasks/gemm_cuda <kernel>`) is the real check.
//
//   nvcc -std=c++17 -gencode=arch=compute_90a,code=sm_90a -O2 -Iinclude -Ideps/usr/include \
//        -DKERNEL_CU='"../tasks/gemm_cuda/kernels/stage6_tma_ws/kernel.cu"' \
//        bench/gemm_hopper_check.cu -lcuda -o /tmp/gemm_check && /tmp/gemm_check
//
// Add -DGEMM_BN=128, -DGEMM_SERIAL, -DGEMM_NO_SETMAXNREG or -DGEMM_B_LBO_SBO_SWAPPED to test a
// debug configuration of the kernel (see its header). Patterns (values exact in bf16 and fp32):
//   ones      A = 1, B = 1: C = K everywhere. Wrong by a multiple of 64 = a k tile lost or
//             counted twice (pipeline); wrong only near edges = predicates / zero fill.
//   b_layout  A = I (A[m,k] = m == k), B[k,n] = k % 32 + 32 (n % 8): C[m,n] = B[m,n] for m < K.
//             A wrong value v came from B[k', n'] with k' % 32 = v % 32, n' % 8 = v / 32.
//   a_layout  B = I, A[m,k] = m % 32 + 32 (k % 8): C[m,n] = A[m,n] for n < K, decoded the same.
//   random    uniform [-1, 1] bf16, against fp64 (max |err| and the gate's atol 5e-2).
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include KERNEL_CU

namespace check {

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(2);                                                                      \
    }                                                                                    \
  } while (0)

DLTensor matrix(void* data, int64_t* shape, uint8_t code, uint8_t bits) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCUDA, 0};
  t.ndim = 2;
  t.dtype = {code, bits, 1};
  t.shape = shape;
  return t;
}

int run(const char* pattern, int M, int N, int K, uint64_t seed) {
  std::vector<float> a(size_t(M) * K), b(size_t(K) * N);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const std::string p = pattern;
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      a[size_t(m) * K + k] = p == "ones"       ? 1.0f
                             : p == "b_layout" ? float(m == k)
                             : p == "a_layout" ? float(m % 32 + 32 * (k % 8))
                                               : u(rng);
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      b[size_t(k) * N + n] = p == "ones"       ? 1.0f
                             : p == "b_layout" ? float(k % 32 + 32 * (n % 8))
                             : p == "a_layout" ? float(k == n)
                                               : u(rng);
  std::vector<__nv_bfloat16> ab(a.size()), bb(b.size());
  for (size_t i = 0; i < a.size(); ++i) ab[i] = __float2bfloat16(a[i]), a[i] = __bfloat162float(ab[i]);
  for (size_t i = 0; i < b.size(); ++i) bb[i] = __float2bfloat16(b[i]), b[i] = __bfloat162float(bb[i]);

  void *da, *db, *dc;
  CK(cudaMalloc(&da, ab.size() * 2));
  CK(cudaMalloc(&db, bb.size() * 2));
  CK(cudaMalloc(&dc, size_t(M) * N * 4));
  CK(cudaMemcpy(da, ab.data(), ab.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, bb.data(), bb.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemset(dc, 0xFF, size_t(M) * N * 4));  // NaN poison: unwritten outputs show
  int64_t sa[2] = {M, K}, sb[2] = {K, N}, sc[2] = {M, N};
  DLTensor in[2] = {matrix(da, sa, kDLBfloat, 16), matrix(db, sb, kDLBfloat, 16)};
  DLTensor out[1] = {matrix(dc, sc, kDLFloat, 32)};
  char err[256] = {0};
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  lathe_args args{LATHE_ABI_VERSION, in, 2, out, 1, nullptr, 0, nullptr, 0, s, err, sizeof err};
  if (lathe_init() != 0) std::printf("lathe_init failed\n");
  const int rc = lathe_launch(&args);
  cudaError_t e = cudaStreamSynchronize(s);
  std::vector<float> c(size_t(M) * N);
  if (rc == 0 && e == cudaSuccess) CK(cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost));
  cudaFree(da), cudaFree(db), cudaFree(dc), cudaStreamDestroy(s);
  std::printf("%-9s M=%-5d N=%-5d K=%-5d ", pattern, M, N, K);
  if (rc != 0 || e != cudaSuccess) {
    std::printf("FAILED: launch %d (%s), stream %s\n", rc, err, cudaGetErrorString(e));
    return 1;
  }

  // fp64 reference, every element for the small shapes, every 7th row otherwise.
  const int row_step = size_t(M) * N * K > (size_t(1) << 30) ? 7 : 1;
  int64_t bad = 0, checked = 0;
  double max_err = 0;
  int shown = 0;
  std::vector<double> ref(N);
  for (int m = 0; m < M; m += row_step) {
    std::fill(ref.begin(), ref.end(), 0.0);
    for (int k = 0; k < K; ++k) {
      const double av = a[size_t(m) * K + k];
      if (av == 0) continue;
      const float* brow = &b[size_t(k) * N];
      for (int n = 0; n < N; ++n) ref[n] += av * brow[n];
    }
    for (int n = 0; n < N; ++n) {
      const double got = c[size_t(m) * N + n], want = ref[n];
      const double d = std::fabs(got - want);
      ++checked;
      if (!(d <= 5e-2 + 1e-2 * std::fabs(want))) {
        ++bad;
        if (shown++ < 6) {
          std::printf("\n    C[%d,%d] = %g, want %g", m, n, got, want);
          if (p == "b_layout" || p == "a_layout")
            std::printf("  (got looks like k'%%32=%d, n'%%8=%d)", int(got) % 32, int(got) / 32);
          if (p == "ones") std::printf("  (%+g k tiles of 64)", (got - want) / 64.0);
        }
      }
      if (!std::isnan(d)) max_err = std::max(max_err, d);
    }
  }
  std::printf("%s%s: %lld of %lld checked wrong, max |err| %.3g\n", bad ? "\n    " : "",
              bad ? "WRONG" : "ok", (long long)bad, (long long)checked, max_err);
  return bad ? 1 : 0;
}

}  // namespace check

int main() {
  struct shape {
    int m, n, k;
  };
  const shape shapes[] = {{64, 64, 64},   {128, 256, 64},   {128, 256, 512},
                          {200, 264, 72}, {997, 1016, 1032}, {4096, 4096, 4096}};
  int failures = 0;
  for (const char* p : {"ones", "b_layout", "a_layout", "random"})
    for (const auto& s : shapes) {
      if (s.m * size_t(s.n) * s.k > (size_t(1) << 32) && std::string(p) != "random") continue;
      failures += check::run(p, s.m, s.n, s.k, 42);
    }
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
