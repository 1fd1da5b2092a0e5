// One input element, computed the same way on the host and on a CUDA device, bit for bit.
//
// Why by hand: inputs generated on the GPU must equal those the CPU reference sees. libm's log
// and cos and CUDA's differ in the last ulp, and nvcc contracts a*b+c into an FMA by default, so
// this header uses only IEEE-exact operations (+ - * / sqrt floor) with explicit rounding
// intrinsics on the device, and its own log and cos built from them. The accuracy (about 1 ulp)
// is irrelevant for test inputs; agreement is what matters.
// Free of the standard library (like philox.h) apart from <math.h>/<string.h>, so it compiles
// as host+device code under nvcc.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/dtype.h"
#include "core/philox.h"

namespace lathe::rng {

// distribution_kind values (core/task.h; rng.cpp checks they agree).
enum : uint8_t { kind_uniform = 0, kind_normal = 1, kind_integers = 2, kind_constant = 3 };

struct element_params {
  uint8_t kind = kind_uniform;
  double a = -1.0, b = 1.0;  // uniform, integers: low, high; normal: mean, stddev; constant: a
  double scale = 1.0, shift = 0.0;  // perturbation, applied to floating dtypes only
  uint64_t seed = 0;
  uint32_t tensor = 0;  // tensor index: each tensor draws its own stream
};

// ---- exact arithmetic: no FMA contraction on the device ----
LATHE_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
LATHE_HD double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
LATHE_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
LATHE_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

LATHE_HD uint64_t bits_of(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  return u;
#endif
}
LATHE_HD double double_of(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  memcpy(&d, &u, sizeof d);
  return d;
#endif
}

// ---- log and cos(2 pi t) from exact operations ----

// Natural log of a finite x > 0. x = m * 2^e with m in [sqrt(1/2), sqrt(2)); log m =
// 2 atanh(f), f = (m-1)/(m+1), |f| <= 0.172: 12 terms of the odd series reach 1e-19.
LATHE_HD double log_det(double x) {
  uint64_t b = bits_of(x);
  int e = static_cast<int>((b >> 52) & 0x7ff);
  if (e == 0) {  // subnormal: scale into the normal range first (2^54 is exact)
    x = mul_rn(x, 18014398509481984.0);
    b = bits_of(x);
    e = static_cast<int>((b >> 52) & 0x7ff) - 54;
  }
  e -= 1023;
  double m = double_of((b & ((uint64_t{1} << 52) - 1)) | (uint64_t{1023} << 52));
  if (m > 1.4142135623730951) {
    m = mul_rn(m, 0.5);
    ++e;
  }
  const double f = div_rn(sub_rn(m, 1.0), add_rn(m, 1.0));
  const double s = mul_rn(f, f);
  double p = 1.0 / 23.0;
  p = add_rn(1.0 / 21.0, mul_rn(s, p));
  p = add_rn(1.0 / 19.0, mul_rn(s, p));
  p = add_rn(1.0 / 17.0, mul_rn(s, p));
  p = add_rn(1.0 / 15.0, mul_rn(s, p));
  p = add_rn(1.0 / 13.0, mul_rn(s, p));
  p = add_rn(1.0 / 11.0, mul_rn(s, p));
  p = add_rn(1.0 / 9.0, mul_rn(s, p));
  p = add_rn(1.0 / 7.0, mul_rn(s, p));
  p = add_rn(1.0 / 5.0, mul_rn(s, p));
  p = add_rn(1.0 / 3.0, mul_rn(s, p));
  p = add_rn(1.0, mul_rn(s, p));
  const double log_m = mul_rn(mul_rn(2.0, f), p);
  // ln 2 split in a high part with trailing zero bits (e * hi is exact) and the rest.
  const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return add_rn(mul_rn(de, ln2_hi), add_rn(mul_rn(de, ln2_lo), log_m));
}

// sin x and cos x for |x| <= pi/4 by Taylor series (the last term used is below 1e-19).
LATHE_HD double sin_small(double x) {
  const double s = mul_rn(x, x);
  double p = -1.0 / 121645100408832000.0;  // -1/19!
  p = add_rn(1.0 / 355687428096000.0, mul_rn(s, p));
  p = add_rn(-1.0 / 1307674368000.0, mul_rn(s, p));
  p = add_rn(1.0 / 6227020800.0, mul_rn(s, p));
  p = add_rn(-1.0 / 39916800.0, mul_rn(s, p));
  p = add_rn(1.0 / 362880.0, mul_rn(s, p));
  p = add_rn(-1.0 / 5040.0, mul_rn(s, p));
  p = add_rn(1.0 / 120.0, mul_rn(s, p));
  p = add_rn(-1.0 / 6.0, mul_rn(s, p));
  return add_rn(x, mul_rn(mul_rn(x, s), p));
}
LATHE_HD double cos_small(double x) {
  const double s = mul_rn(x, x);
  double p = 1.0 / 2432902008176640000.0;  // 1/20!
  p = add_rn(-1.0 / 6402373705728000.0, mul_rn(s, p));
  p = add_rn(1.0 / 20922789888000.0, mul_rn(s, p));
  p = add_rn(-1.0 / 87178291200.0, mul_rn(s, p));
  p = add_rn(1.0 / 479001600.0, mul_rn(s, p));
  p = add_rn(-1.0 / 3628800.0, mul_rn(s, p));
  p = add_rn(1.0 / 40320.0, mul_rn(s, p));
  p = add_rn(-1.0 / 720.0, mul_rn(s, p));
  p = add_rn(1.0 / 24.0, mul_rn(s, p));
  p = add_rn(-0.5, mul_rn(s, p));
  return add_rn(1.0, mul_rn(s, p));
}

// cos(2 pi t) for t in [0, 1): quadrant from 4t (exact), then an angle of at most pi/4.
LATHE_HD double cos_2pi(double t) {
  const double t4 = mul_rn(t, 4.0);
  const int q = static_cast<int>(t4) & 3;
  double r = sub_rn(t4, static_cast<double>(static_cast<int>(t4)));  // [0, 1), exact
  bool swap = false;  // cos <-> sin when the angle is reflected about pi/4
  if (r > 0.5) {
    r = sub_rn(1.0, r);
    swap = true;
  }
  const double x = mul_rn(r, 1.5707963267948966);  // r * pi/2
  const double c = swap ? sin_small(x) : cos_small(x);
  const double s = swap ? cos_small(x) : sin_small(x);
  switch (q) {
    case 0:
      return c;
    case 1:
      return -s;
    case 2:
      return -c;
    default:
      return s;
  }
}

// ---- narrow floating formats: round to nearest even, from the fp64 bits ----

// Rounds d to a binary format with `E` exponent and `M` mantissa bits (f16: 5/10, bf16: 8/7).
LATHE_HD uint16_t narrow_bits(double d, int E, int M) {
  const uint64_t b = bits_of(d);
  const uint16_t sign = static_cast<uint16_t>((b >> 63) << (E + M));
  const int e = static_cast<int>((b >> 52) & 0x7ff);
  const uint64_t m = b & ((uint64_t{1} << 52) - 1);
  const int exp_all = (1 << E) - 1;
  if (e == 0x7ff) {  // inf, or NaN made quiet
    const uint16_t inf = static_cast<uint16_t>(sign | (exp_all << M));
    return m != 0 ? static_cast<uint16_t>(inf | (1 << (M - 1))) : inf;
  }
  if (e == 0) return sign;  // fp64 zero or subnormal: far below half the smallest narrow value
  const int bias = (1 << (E - 1)) - 1;
  int te = e - 1023 + bias;
  const uint64_t sig = m | (uint64_t{1} << 52);
  int shift = 52 - M;
  if (te <= 0) shift += 1 - te;  // subnormal result: fewer mantissa bits survive
  if (shift >= 54) return sign;  // below half the smallest subnormal (sig < 2^53 <= half)
  uint64_t r = sig >> shift;
  const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
  const uint64_t half = uint64_t{1} << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) ++r;
  if (te <= 0) return static_cast<uint16_t>(sign | r);  // r == 2^M encodes the smallest normal
  if (r == (uint64_t{1} << (M + 1))) {                  // rounding carried into the exponent
    r >>= 1;
    ++te;
  }
  if (te >= exp_all) return static_cast<uint16_t>(sign | (exp_all << M));  // overflow: inf
  return static_cast<uint16_t>(sign | (te << M) | (r & ((uint64_t{1} << M) - 1)));
}

LATHE_HD uint16_t double_to_f16_bits(double d) {
  return narrow_bits(d, 5, 10);
}
LATHE_HD uint16_t double_to_bf16_bits(double d) {
  return narrow_bits(d, 8, 7);
}

LATHE_HD double f16_bits_to_double(uint16_t h) {
  const uint64_t sign = static_cast<uint64_t>(h >> 15) << 63;
  const int e = (h >> 10) & 0x1f;
  const uint64_t m = h & 0x3ff;
  if (e == 0) {  // zero or subnormal: m * 2^-24, exact in fp64
    const double v = mul_rn(static_cast<double>(m), 5.9604644775390625e-08);
    return sign ? -v : v;
  }
  if (e == 31) return double_of(sign | (uint64_t{0x7ff} << 52) | (m << 42));
  return double_of(sign | (static_cast<uint64_t>(e - 15 + 1023) << 52) | (m << 42));
}

LATHE_HD double bf16_bits_to_double(uint16_t h) {
  // bf16 is the top half of an fp32; widen the fp32 bits straight into fp64 bits.
  const uint64_t sign = static_cast<uint64_t>(h >> 15) << 63;
  const int e = (h >> 7) & 0xff;
  const uint64_t m = h & 0x7f;
  if (e == 0) {  // zero or subnormal: m * 2^-133, exact in fp64
    const double v = mul_rn(static_cast<double>(m), 9.183549615799121e-41);
    return sign ? -v : v;
  }
  if (e == 255) return double_of(sign | (uint64_t{0x7ff} << 52) | (m << 45));
  return double_of(sign | (static_cast<uint64_t>(e - 127 + 1023) << 52) | (m << 45));
}

// ---- typed loads and stores ----

// Integer stores take the floor and saturate (NaN -> 0): a C cast of an out-of-range double is
// undefined behaviour.
LATHE_HD double floor_clamp(double v, double lo, double hi) {
  if (v != v) return 0.0;
  v = floor(v);
  return v < lo ? lo : (v > hi ? hi : v);
}

LATHE_HD void store_element(dtype t, void* data, uint64_t i, double v) {
  switch (t) {
    case dtype::f64:
      static_cast<double*>(data)[i] = v;
      return;
    case dtype::f32:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      return;
    case dtype::f16:
      static_cast<uint16_t*>(data)[i] = double_to_f16_bits(v);
      return;
    case dtype::bf16:
      static_cast<uint16_t*>(data)[i] = double_to_bf16_bits(v);
      return;
    case dtype::i8:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(floor_clamp(v, -128.0, 127.0));
      return;
    case dtype::i16:
      static_cast<int16_t*>(data)[i] = static_cast<int16_t>(floor_clamp(v, -32768.0, 32767.0));
      return;
    case dtype::i32:
      static_cast<int32_t*>(data)[i] =
          static_cast<int32_t>(floor_clamp(v, -2147483648.0, 2147483647.0));
      return;
    case dtype::i64: {
      // 2^63 is not an int64; compare against it rather than against INT64_MAX (which rounds up).
      int64_t r;
      if (v != v)
        r = 0;
      else if (v >= 9223372036854775808.0)
        r = INT64_MAX;
      else if (v < -9223372036854775808.0)
        r = INT64_MIN;
      else
        r = static_cast<int64_t>(floor(v));
      static_cast<int64_t*>(data)[i] = r;
      return;
    }
    case dtype::u8:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(floor_clamp(v, 0.0, 255.0));
      return;
    case dtype::u16:
      static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(floor_clamp(v, 0.0, 65535.0));
      return;
    case dtype::u32:
      static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(floor_clamp(v, 0.0, 4294967295.0));
      return;
    case dtype::u64: {
      uint64_t r;
      if (v != v || v < 0.0)
        r = 0;
      else if (v >= 18446744073709551616.0)
        r = UINT64_MAX;
      else
        r = static_cast<uint64_t>(floor(v));
      static_cast<uint64_t*>(data)[i] = r;
      return;
    }
    case dtype::boolean:
      static_cast<uint8_t*>(data)[i] = v != 0.0 ? 1 : 0;
      return;
  }
}

LATHE_HD double load_element(dtype t, const void* data, uint64_t i) {
  switch (t) {
    case dtype::f64:
      return static_cast<const double*>(data)[i];
    case dtype::f32:
      return static_cast<const float*>(data)[i];
    case dtype::f16:
      return f16_bits_to_double(static_cast<const uint16_t*>(data)[i]);
    case dtype::bf16:
      return bf16_bits_to_double(static_cast<const uint16_t*>(data)[i]);
    case dtype::i8:
      return static_cast<const int8_t*>(data)[i];
    case dtype::i16:
      return static_cast<const int16_t*>(data)[i];
    case dtype::i32:
      return static_cast<const int32_t*>(data)[i];
    case dtype::i64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case dtype::u8:
      return static_cast<const uint8_t*>(data)[i];
    case dtype::u16:
      return static_cast<const uint16_t*>(data)[i];
    case dtype::u32:
      return static_cast<const uint32_t*>(data)[i];
    case dtype::u64:
      return static_cast<double>(static_cast<const uint64_t*>(data)[i]);
    case dtype::boolean:
      return static_cast<const uint8_t*>(data)[i] != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

// ---- the element ----

// Value of element i before conversion to the dtype. Bool elements are 1 with probability 1/2
// (a constant distribution gives value != 0); perturbations apply to floating dtypes only
// (docs/tasks.md: "every floating input may be multiplied…").
LATHE_HD double element_value(const element_params& p, dtype t, uint64_t i) {
  if (p.kind == kind_constant) {
    if (t == dtype::boolean) return p.a != 0.0 ? 1.0 : 0.0;
    const bool fl = t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
    return fl ? add_rn(mul_rn(p.a, p.scale), p.shift) : p.a;
  }
  const philox::u32x4 r = philox::draw(p.seed, p.tensor, i);
  const double u = philox::to_unit_double(r.v[0], r.v[1]);
  if (t == dtype::boolean) return u < 0.5 ? 1.0 : 0.0;
  double v;
  if (p.kind == kind_normal) {
    // Box-Muller from the two unit doubles of one draw; 1 - u is in (0, 1], so log is finite.
    const double u2 = philox::to_unit_double(r.v[2], r.v[3]);
    const double radius = sqrt(mul_rn(-2.0, log_det(sub_rn(1.0, u))));
    v = add_rn(p.a, mul_rn(p.b, mul_rn(radius, cos_2pi(u2))));
  } else if (p.kind == kind_integers) {
    v = floor(add_rn(p.a, mul_rn(add_rn(sub_rn(p.b, p.a), 1.0), u)));
    if (v > p.b) v = p.b;  // (high - low + 1) * u may round up to the next integer
  } else {
    v = add_rn(p.a, mul_rn(sub_rn(p.b, p.a), u));
  }
  const bool fl = t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
  return fl ? add_rn(mul_rn(v, p.scale), p.shift) : v;
}

}  // namespace lathe::rng
