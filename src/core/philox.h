// Philox4x32-10 (Salmon et al., SC'11): a counter-based RNG. A value depends only on
// (key, counter), never on call order, so inputs generated on the device are bit-identical to
// those generated on the host and can be checked against the CPU reference.
// Header-only and free of the standard library so it compiles under nvcc as host+device code.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define LATHE_HD __host__ __device__ __forceinline__
#else
#define LATHE_HD inline
#endif

namespace lathe::philox {

struct u32x4 {
  uint32_t v[4];
};

LATHE_HD void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

// 10 rounds of Philox4x32 on `ctr` with the 64-bit key (k0, k1).
LATHE_HD u32x4 philox4x32_10(u32x4 ctr, uint32_t k0, uint32_t k1) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(M0, ctr.v[0], &hi0, &lo0);
    mulhilo(M1, ctr.v[2], &hi1, &lo1);
    u32x4 n;
    n.v[0] = hi1 ^ ctr.v[1] ^ k0;
    n.v[1] = lo1;
    n.v[2] = hi0 ^ ctr.v[3] ^ k1;
    n.v[3] = lo0;
    ctr = n;
    k0 += W0;
    k1 += W1;
  }
  return ctr;
}

// The stream of one tensor: key = seed, counter = (element index, tensor index, stream tag).
// Element i of tensor t under seed s uses counter {lo(i), hi(i), t, tag}.
LATHE_HD u32x4 draw(uint64_t seed, uint32_t tensor, uint64_t element, uint32_t tag = 0) {
  u32x4 c;
  c.v[0] = static_cast<uint32_t>(element);
  c.v[1] = static_cast<uint32_t>(element >> 32);
  c.v[2] = tensor;
  c.v[3] = tag;
  return philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// 53 random bits -> double in [0, 1). Exact in fp64, so host and device agree.
LATHE_HD double to_unit_double(uint32_t a, uint32_t b) {
  uint64_t bits = (static_cast<uint64_t>(a) << 21) ^ (static_cast<uint64_t>(b) >> 11);
  bits &= (uint64_t{1} << 53) - 1;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

}  // namespace lathe::philox
