#include "gate/fresh_windows.h"

#include <algorithm>
#include <cstring>

#include "gate/check.h"

namespace lathe::gate {
namespace {

constexpr uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// As timing_arena.cpp's pools: up to 4096 shifts of 256 bytes, never past the tensor (a shift
// past it would repeat a smaller one). A block of 20 ms has ~10,000 calls of a 2 us kernel at
// most; over one slot of a tensor that large (a 60 MB input takes 12 us a call) it needs far fewer.
uint64_t slack_of(uint64_t bytes) { return std::min<uint64_t>(bytes / 256 * 256, uint64_t{1} << 20); }

}  // namespace

window_layout make_windows(const slot_layout& l, uint32_t slots) {
  window_layout w;
  w.slots = std::max<uint32_t>(slots, 1);
  uint64_t off = 0;
  for (const auto& in : l.inputs) {
    w.input_at.push_back(off);
    w.slack.push_back(slack_of(in.bytes));
    w.windows = std::max<uint32_t>(w.windows, static_cast<uint32_t>(w.slack.back() / 256 + 1));
    off += align_up(in.bytes + w.slack.back(), 256);
  }
  for (const auto& out : l.outputs) {
    w.output_at.push_back(off);
    off += align_up(out.bytes, 256);
  }
  w.slot_bytes = align_up(std::max<uint64_t>(off, 1), 4096);
  return w;
}

wire::command window_setup(const task& t, const slot_layout& l, const window_layout& w) {
  wire::command c = setup_command(t, l, w.slots);
  c.slot_stride = w.slot_bytes;
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    c.tensors[i].offset = w.input_at[i];
    c.tensors[i].slack = w.slack[i];
  }
  for (size_t o = 0; o < l.outputs.size(); ++o) c.tensors[l.inputs.size() + o].offset = w.output_at[o];
  return c;
}

std::optional<uint64_t> last_call_on(uint32_t slot, uint32_t rotate, uint64_t calls) {
  if (rotate == 0 || slot >= rotate || calls <= slot) return std::nullopt;
  return slot + uint64_t{rotate} * ((calls - 1 - slot) / rotate);
}

std::vector<uint8_t> window_inputs(const slot_layout& l, const window_layout& w,
                                   const std::vector<uint8_t>& inputs, uint32_t window) {
  std::vector<uint8_t> out(l.input_bytes, 0);
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const uint64_t n = l.inputs[i].bytes;
    const uint64_t s = wire::window_shift(w.slack[i], window);  // <= slack <= n
    const uint8_t* src = inputs.data() + l.input_offset[i];
    uint8_t* dst = out.data() + l.input_offset[i];
    std::memcpy(dst, src + s, n - s);
    std::memcpy(dst + (n - s), src, s);
  }
  return out;
}

void stage_window_slot(const task& t, const slot_layout& l, const window_layout& w,
                       const std::vector<uint8_t>& inputs, uint8_t* slot) {
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const uint8_t* src = inputs.data() + l.input_offset[i];
    std::memcpy(slot + w.input_at[i], src, l.inputs[i].bytes);
    std::memcpy(slot + w.input_at[i] + l.inputs[i].bytes, src, w.slack[i]);
  }
  for (size_t o = 0; o < l.outputs.size(); ++o)
    poison(t.outputs[o].type, slot + w.output_at[o], l.outputs[o].elements);
}

bool window_inputs_intact(const slot_layout& l, const window_layout& w,
                          const std::vector<uint8_t>& inputs, const uint8_t* slot) {
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const uint8_t* src = inputs.data() + l.input_offset[i];
    const uint8_t* buf = slot + w.input_at[i];
    if (std::memcmp(buf, src, l.inputs[i].bytes) != 0 ||
        std::memcmp(buf + l.inputs[i].bytes, src, w.slack[i]) != 0)
      return false;
  }
  return true;
}

std::vector<uint8_t> standard_slot(const slot_layout& l, const window_layout& w, const uint8_t* slot,
                                   uint32_t window) {
  std::vector<uint8_t> out(l.slot_bytes, 0);
  for (size_t i = 0; i < l.inputs.size(); ++i)
    std::memcpy(out.data() + l.input_offset[i],
                slot + w.input_at[i] + wire::window_shift(w.slack[i], window), l.inputs[i].bytes);
  for (size_t o = 0; o < l.outputs.size(); ++o)
    std::memcpy(out.data() + l.output_offset[o], slot + w.output_at[o], l.outputs[o].bytes);
  return out;
}

wire::command refill_command(uint32_t slots, uint64_t seed) {
  wire::command c;
  c.kind = wire::op::fill;
  c.first_slot = 0;
  c.rotate = slots;
  c.seed = seed;
  c.scale = 1.0;
  c.shift = 0.0;
  c.window = 0;
  return c;
}

}  // namespace lathe::gate
