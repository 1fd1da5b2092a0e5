#include <cstdint>
#include "core/dtype.h"

#include <dlpack/dlpack.h>

#include <array>
#include <utility>

namespace lathe {

std::string_view to_string(dtype t) {
  switch (t) {
    case dtype::f16:
      return "float16";
    case dtype::bf16:
      return "bfloat16";
    case dtype::f32:
      return "float32";
    case dtype::f64:
      return "float64";
    case dtype::i8:
      return "int8";
    case dtype::i16:
      return "int16";
    case dtype::i32:
      return "int32";
    case dtype::i64:
      return "int64";
    case dtype::u8:
      return "uint8";
    case dtype::u16:
      return "uint16";
    case dtype::u32:
      return "uint32";
    case dtype::u64:
      return "uint64";
    case dtype::boolean:
      return "bool";
  }
  return "?";
}

std::optional<dtype> parse_dtype(std::string_view name) {
  // Canonical names first (what to_string gives), then the aliases people type from habit
  // (PyTorch, NumPy, CUDA spellings).
  static constexpr std::array<std::pair<std::string_view, dtype>, 31> names{{
      {"float16", dtype::f16},  {"f16", dtype::f16},       {"fp16", dtype::f16},
      {"half", dtype::f16},     {"bfloat16", dtype::bf16}, {"bf16", dtype::bf16},
      {"float32", dtype::f32},  {"f32", dtype::f32},       {"fp32", dtype::f32},
      {"float", dtype::f32},    {"float64", dtype::f64},   {"f64", dtype::f64},
      {"fp64", dtype::f64},     {"double", dtype::f64},    {"int8", dtype::i8},
      {"i8", dtype::i8},        {"int16", dtype::i16},     {"i16", dtype::i16},
      {"int32", dtype::i32},    {"i32", dtype::i32},       {"int64", dtype::i64},
      {"i64", dtype::i64},      {"uint8", dtype::u8},      {"u8", dtype::u8},
      {"uint16", dtype::u16},   {"u16", dtype::u16},       {"uint32", dtype::u32},
      {"u32", dtype::u32},      {"uint64", dtype::u64},    {"u64", dtype::u64},
      {"bool", dtype::boolean},
  }};
  for (const auto& [n, t] : names) {
    if (n == name) return t;
  }
  return std::nullopt;
}

uint32_t size_of(dtype t) {
  switch (t) {
    case dtype::i8:
    case dtype::u8:
    case dtype::boolean:
      return 1;
    case dtype::f16:
    case dtype::bf16:
    case dtype::i16:
    case dtype::u16:
      return 2;
    case dtype::f32:
    case dtype::i32:
    case dtype::u32:
      return 4;
    case dtype::f64:
    case dtype::i64:
    case dtype::u64:
      return 8;
  }
  return 0;
}

bool is_floating(dtype t) {
  return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64;
}

uint8_t dl_code(dtype t) {
  switch (t) {
    case dtype::f16:
    case dtype::f32:
    case dtype::f64:
      return kDLFloat;
    case dtype::bf16:
      return kDLBfloat;
    case dtype::i8:
    case dtype::i16:
    case dtype::i32:
    case dtype::i64:
      return kDLInt;
    case dtype::u8:
    case dtype::u16:
    case dtype::u32:
    case dtype::u64:
    case dtype::boolean:
      return kDLUInt;  // DLPack 0.6 has no bool code (ABI v1)
  }
  return kDLUInt;
}

uint8_t dl_bits(dtype t) {
  return static_cast<uint8_t>(size_of(t) * 8);
}

}  // namespace lathe
