// Element types of task tensors, and their DLPack codes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lathe {

enum class dtype : uint8_t { f16, bf16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, boolean };

std::string_view to_string(dtype t);
std::optional<dtype> parse_dtype(std::string_view name);  // "float32", "f32", "bf16", "int64"…
uint32_t size_of(dtype t);                                  // bytes per element
bool is_floating(dtype t);
// DLPack (code, bits): bool is kDLUInt 8-bit (DLPack 0.6 has no bool code; DESIGN.md, ABI v1).
uint8_t dl_code(dtype t);
uint8_t dl_bits(dtype t);

}  // namespace lathe
