// The bit patterns lathe writes into outputs before every call (gate/check.h): floating outputs
// get a quiet NaN whose payload no arithmetic produces, integer outputs 0xA5 bytes. An element
// still holding its pattern after the call was not written. Shared by the host check and the
// CUDA worker's device check (worker/device_ops.cu).
#pragma once

#include <cstdint>

namespace lathe::poison_bits {

constexpr uint32_t f32 = 0x7fc0dead;  // quiet NaN, payload 0xdead
constexpr uint64_t f64 = 0x7ff8deaddeaddeadull;
constexpr uint16_t f16 = 0x7e5a;      // quiet NaN with payload (fp16 layout)
constexpr uint16_t bf16 = 0x7fda;     // quiet NaN with payload (bf16 layout)
constexpr uint8_t byte = 0xA5;        // every byte of an integer or bool element

}  // namespace lathe::poison_bits
