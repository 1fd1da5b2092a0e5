#include "gate/timing_arena.h"

#include <algorithm>
#include <cstring>

#include "gate/check.h"

namespace lathe::gate {
namespace {

constexpr uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// Rotations a window may take: up to 4096 shifts of 256 bytes (1 MiB), never more than the
// tensor itself (a shift past it would repeat a smaller one).
uint64_t slack_of(uint64_t bytes) {
  return std::min<uint64_t>(bytes / 256 * 256, uint64_t{1} << 20);
}

uint64_t pool_bytes(const slot_layout& l) {
  uint64_t b = 0;
  for (const auto& in : l.inputs) b += align_up(in.bytes + slack_of(in.bytes), 256);
  return b;
}

}  // namespace

arena_layout make_arena(const slot_layout& l, uint32_t pools, uint32_t entries) {
  arena_layout a;
  a.pools = std::max<uint32_t>(pools, 1);
  a.entries = std::max<uint32_t>(entries, 1);
  a.tensors = static_cast<uint32_t>(l.inputs.size() + l.outputs.size());
  a.table_offset = 0;
  uint64_t off = align_up(uint64_t{a.entries} * a.tensors * sizeof(uint64_t), 4096);
  for (const auto& in : l.inputs) a.slack.push_back(slack_of(in.bytes));
  a.input_at.resize(a.pools);
  for (uint32_t p = 0; p < a.pools; ++p) {
    a.pool_begin.push_back(off);
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      a.input_at[p].push_back(off);
      off += align_up(l.inputs[i].bytes + a.slack[i], 256);
    }
    a.pool_end.push_back(off);
  }
  a.areas_begin = align_up(off, 4096);
  a.area_bytes = align_up(std::max<uint64_t>(l.output_bytes, 1), 256);
  a.bytes = align_up(a.areas_begin + uint64_t{a.entries} * a.area_bytes, 4096);
  return a;
}

void size_arena(const slot_layout& l, uint64_t llc_bytes, uint64_t pool_budget,
                uint64_t output_budget, uint32_t& pools, uint32_t& entries) {
  // Two areas at least (a block of two calls) unless two would pass four times the budget.
  const uint64_t area = align_up(std::max<uint64_t>(l.output_bytes, 1), 256);
  const uint64_t least = 2 * area <= 4 * output_budget ? 2 : 1;
  entries = static_cast<uint32_t>(std::clamp<uint64_t>(output_budget / area, least, 4096));
  // Pools enough that a block's reads and writes together pass twice the LLC (as the four slots'
  // did), no more: every page costs (see kernel_host.cpp, setup).
  const uint64_t in = std::max<uint64_t>(l.input_bytes, 1);
  const uint64_t written = uint64_t{entries} * area;
  const uint64_t reads = 2 * llc_bytes > written ? 2 * llc_bytes - written : 0;
  const uint64_t per_pool = std::max<uint64_t>(pool_bytes(l), 1);
  pools = static_cast<uint32_t>(std::clamp<uint64_t>((reads + in - 1) / in, 1, 16));
  while (pools > 1 && uint64_t{pools} * per_pool > pool_budget) --pools;
}

std::vector<arena_call> plan_block(const arena_layout& a, uint32_t calls, uint32_t& next_pool,
                                   std::mt19937_64& rng) {
  std::vector<arena_call> out(std::min(calls, a.entries));
  for (uint32_t i = 0; i < out.size(); ++i) {
    arena_call& c = out[i];
    c.pool = next_pool++ % a.pools;
    c.area = i;
    for (uint64_t s : a.slack) c.shift.push_back(256 * (rng() % (s / 256 + 1)));
  }
  return out;
}

void write_table(const arena_layout& a, const slot_layout& l, const std::vector<arena_call>& calls,
                 uint8_t* region) {
  auto* table = reinterpret_cast<uint64_t*>(region + a.table_offset);
  for (size_t i = 0; i < calls.size(); ++i) {
    uint64_t* e = table + i * a.tensors;
    const arena_call& c = calls[i];
    for (size_t k = 0; k < l.inputs.size(); ++k) e[k] = a.input_at[c.pool][k] + c.shift[k];
    const uint64_t area = a.areas_begin + uint64_t{c.area} * a.area_bytes;
    for (size_t o = 0; o < l.outputs.size(); ++o)
      e[l.inputs.size() + o] = area + (l.output_offset[o] - l.input_bytes);
  }
}

std::vector<std::vector<uint8_t>> pool_contents(const arena_layout& a, const slot_layout& l,
                                                const std::vector<trial_data>& data) {
  std::vector<std::vector<uint8_t>> pools(a.pools);
  for (uint32_t p = 0; p < a.pools; ++p) {
    const trial_data& d = data[p % data.size()];
    std::vector<uint8_t>& m = pools[p];
    m.assign(a.pool_end[p] - a.pool_begin[p], 0);
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      uint8_t* at = m.data() + (a.input_at[p][i] - a.pool_begin[p]);
      const uint8_t* src = d.inputs.data() + l.input_offset[i];
      std::memcpy(at, src, l.inputs[i].bytes);
      std::memcpy(at + l.inputs[i].bytes, src, a.slack[i]);  // the rotation's wrap-around
    }
  }
  return pools;
}

void stage_pools(const arena_layout& a, const std::vector<std::vector<uint8_t>>& pools,
                 uint8_t* region) {
  for (uint32_t p = 0; p < a.pools; ++p)
    std::memcpy(region + a.pool_begin[p], pools[p].data(), pools[p].size());
}

void poison_areas(const task& t, const arena_layout& a, const slot_layout& l, uint32_t from,
                  uint32_t to, uint8_t* region) {
  for (uint32_t k = from; k < std::min(to, a.entries); ++k) {
    uint8_t* area = region + a.areas_begin + uint64_t{k} * a.area_bytes;
    for (size_t o = 0; o < l.outputs.size(); ++o)
      poison(t.outputs[o].type, area + (l.output_offset[o] - l.input_bytes), l.outputs[o].elements);
  }
}

bool pools_intact(const arena_layout& a, const std::vector<std::vector<uint8_t>>& pools,
                  const uint8_t* region) {
  for (uint32_t p = 0; p < a.pools; ++p)
    if (std::memcmp(region + a.pool_begin[p], pools[p].data(), pools[p].size()) != 0) return false;
  return true;
}

std::vector<uint8_t> call_inputs(const arena_layout& a, const slot_layout& l,
                                 const std::vector<std::vector<uint8_t>>& pools, const arena_call& c) {
  std::vector<uint8_t> in(l.input_bytes, 0);
  for (size_t i = 0; i < l.inputs.size(); ++i)
    std::memcpy(in.data() + l.input_offset[i],
                pools[c.pool].data() + (a.input_at[c.pool][i] - a.pool_begin[c.pool]) + c.shift[i],
                l.inputs[i].bytes);
  return in;
}

void call_reservoir::offer(const arena_layout& a, const std::vector<arena_call>& calls, uint32_t pair,
                           const uint8_t* region, std::mt19937_64& rng) {
  if (calls.empty() || size_ == 0) return;
  ++blocks_;
  size_t slot = kept_.size();
  if (kept_.size() >= size_) {
    slot = rng() % blocks_;
    if (slot >= size_) return;
  }
  call_sample s;
  s.block = blocks_;
  s.pair = pair;
  s.call = calls[rng() % calls.size()];
  const uint8_t* area = region + a.areas_begin + uint64_t{s.call.area} * a.area_bytes;
  s.outputs.assign(area, area + a.area_bytes);
  if (slot == kept_.size()) kept_.push_back(std::move(s));
  else kept_[slot] = std::move(s);
}

}  // namespace lathe::gate
