#include "gate/timing_arena.h"

#include <algorithm>
#include <cstring>
#include <optional>

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

void call_inputs(const arena_layout& a, const slot_layout& l, const uint8_t* region, const arena_call& c,
                 std::vector<uint8_t>& in) {
  in.assign(l.input_bytes, 0);  // in a vector that held a sample before: no new pages
  for (size_t i = 0; i < l.inputs.size(); ++i)
    std::memcpy(in.data() + l.input_offset[i], region + a.input_at[c.pool][i] + c.shift[i],
                l.inputs[i].bytes);
}

namespace {

// A permutation of [0, n) (Fisher-Yates).
std::vector<uint32_t> shuffled(uint32_t n, std::mt19937_64& rng) {
  std::vector<uint32_t> p(n);
  for (uint32_t i = 0; i < n; ++i) p[i] = i;
  for (uint32_t i = n; i > 1; --i) std::swap(p[i - 1], p[rng() % i]);
  return p;
}

// Tensors up to this size are permuted element by element (at most 64 KiB: cheap, and a tensor
// of a few chunks would otherwise have few arrangements); larger ones by 256-byte chunks, the
// ABI's alignment, which costs a copy.
constexpr uint64_t element_permutation_bytes = uint64_t{64} << 10;
constexpr uint64_t chunk = 256;

}  // namespace

void write_pool(const arena_layout& a, const slot_layout& l, const std::vector<uint8_t>& inputs,
                uint32_t pool, uint8_t* region) {
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    uint8_t* at = region + a.input_at[pool][i];
    std::memcpy(at, inputs.data() + l.input_offset[i], l.inputs[i].bytes);
    std::memcpy(at + l.inputs[i].bytes, at, a.slack[i]);
  }
}

namespace {

// The centre a task's distribution is symmetric about, for the reflection x -> 2c - x: uniform
// (about its midpoint) and normal (about its mean) are; integers and constants are left alone.
std::optional<double> centre_of(const tensor_spec& in) {
  if (in.type != dtype::f32 && in.type != dtype::f64) return std::nullopt;
  switch (in.dist.kind) {
    case distribution_kind::uniform: return (in.dist.low + in.dist.high) / 2;
    case distribution_kind::normal: return in.dist.mean;
    default: return std::nullopt;
  }
}

// Element k of `n` at `at` reflected about c where bit k of the draw is set.
template <class T>
void reflect(uint8_t* at, uint64_t n, double c, std::mt19937_64& rng) {
  const T twice = static_cast<T>(2 * c);
  for (uint64_t k = 0; k < n; k += 64) {
    const uint64_t bits = rng();
    for (uint64_t j = 0; j < 64 && k + j < n; ++j) {
      if (!(bits >> j & 1)) continue;
      T v;
      std::memcpy(&v, at + (k + j) * sizeof(T), sizeof(T));
      v = twice - v;
      std::memcpy(at + (k + j) * sizeof(T), &v, sizeof(T));
    }
  }
}

}  // namespace

void permute_pool(const task& t, const arena_layout& a, const slot_layout& l,
                  const std::vector<uint8_t>& base, uint32_t pool, uint8_t* region, std::mt19937_64& rng) {
  for (size_t i = 0; i < l.inputs.size(); ++i) {
    const uint64_t bytes = l.inputs[i].bytes;
    const uint8_t* src = base.data() + (a.input_at[pool][i] - a.pool_begin[pool]);
    uint8_t* dst = region + a.input_at[pool][i];
    const uint64_t elements = l.inputs[i].elements;
    if (bytes <= element_permutation_bytes && elements > 0 && bytes % elements == 0) {
      const uint64_t size = bytes / elements;
      const std::vector<uint32_t> p = shuffled(static_cast<uint32_t>(elements), rng);
      for (uint64_t k = 0; k < elements; ++k) std::memcpy(dst + k * size, src + p[k] * size, size);
    } else {
      // Whole chunks move; a tail shorter than a chunk stays where it was.
      const std::vector<uint32_t> p = shuffled(static_cast<uint32_t>(bytes / chunk), rng);
      for (uint64_t k = 0; k < p.size(); ++k) std::memcpy(dst + k * chunk, src + uint64_t{p[k]} * chunk, chunk);
      std::memcpy(dst + p.size() * chunk, src + p.size() * chunk, bytes - p.size() * chunk);
    }
    // Each element reflected about the distribution's centre, or not, at random: a chunk that
    // moved is not the chunk it was (a memo keyed by two of its values, or by its address, finds
    // other values), and a row is not a sum of chunks seen before.
    if (const auto c = i < t.inputs.size() ? centre_of(t.inputs[i]) : std::nullopt) {
      if (t.inputs[i].type == dtype::f32) reflect<float>(dst, elements, *c, rng);
      else reflect<double>(dst, elements, *c, rng);
    }
    std::memcpy(dst + bytes, dst, a.slack[i]);  // the rotation's wrap-around
  }
}

pool_refresher::pool_refresher(const arena_layout& a, uint64_t seed)
    : a_(&a), rng_(seed), hash_(a.pools, 0), spec_(a.pools), read_(a.pools, 0) {
  // The key never leaves lathe's memory: a kernel that writes its inputs cannot make the bytes
  // it leaves hash as lathe's did.
  std::random_device rd;
  key_ = (uint64_t{rd()} << 32 | rd()) ^ seed;
}

uint64_t pool_refresher::hash_of(const uint8_t* region, uint32_t pool) const {
  // Four independent lanes (xxHash64's round: a multiply, a rotation, a multiply), so that a
  // pool hashes at several GB/s; the length and the key go into every lane.
  constexpr uint64_t p1 = 0x9E3779B185EBCA87ull, p2 = 0xC2B2AE3D27D4EB4Full;
  const uint8_t* p = region + a_->pool_begin[pool];
  const uint64_t n = a_->pool_end[pool] - a_->pool_begin[pool];  // a multiple of 256
  uint64_t h[4] = {key_ + p1, key_ ^ p2, key_ + n, key_ - p1};
  for (uint64_t off = 0; off + 32 <= n; off += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + off + 8 * k, 8);
      h[k] += w * p2;
      h[k] = (h[k] << 31 | h[k] >> 33) * p1;
    }
  uint64_t out = n;
  for (uint64_t x : h) out = (out ^ x) * p1 + p2;
  return out ^ (out >> 29);
}

void pool_refresher::staged(const uint8_t* region, const std::vector<trial_spec>& specs) {
  for (uint32_t p = 0; p < a_->pools; ++p) {
    hash_[p] = hash_of(region, p);
    spec_[p] = specs.empty() ? trial_spec{} : specs[p % specs.size()];
    read_[p] = 0;
  }
}

void pool_refresher::read(const std::vector<arena_call>& calls) {
  for (const arena_call& c : calls) read_[c.pool] = 1;
}

result<bool> pool_refresher::refresh(uint8_t* region, const redraw_fn& redraw) {
  for (uint32_t p = 0; p < a_->pools; ++p) {
    if (!read_[p]) continue;
    if (!intact(region, p)) return false;
    auto spec = redraw(p, region, rng_);
    if (!spec) return tl::unexpected(spec.error());
    spec_[p] = *spec;
    hash_[p] = hash_of(region, p);
    read_[p] = 0;
    ++draws_;
  }
  return true;
}

bool pool_refresher::intact(const uint8_t* region, uint32_t pool) const {
  return hash_of(region, pool) == hash_[pool];
}

bool pool_refresher::all_intact(const uint8_t* region) const {
  for (uint32_t p = 0; p < a_->pools; ++p)
    if (!intact(region, p)) return false;
  return true;
}

namespace {
// `s` made the copy of `c`, the block's call at `ordinal` of its process, with its output area and
// the inputs it read (false when its pool no longer holds what lathe staged). A kept sample's
// buffers are written in place: a fresh copy of a large task's areas (64 MiB each for softmax's
// timed shape) cost more in page faults than in copying on the 2-core VM.
bool keep_call(const arena_layout& a, const slot_layout& l, const arena_call& c, uint32_t block, uint32_t pair,
               uint64_t ordinal, const uint8_t* region, const pool_refresher& pools, call_sample& s) {
  s.block = block;
  s.pair = pair;
  s.ordinal = ordinal;
  s.call = c;
  const uint8_t* area = region + a.areas_begin + uint64_t{c.area} * a.area_bytes;
  s.outputs.assign(area, area + a.area_bytes);
  // Its pool is drawn again before the next block: its inputs are copied now, and only from a
  // pool that still holds what lathe staged (when it does not, the evaluation ends here).
  if (!pools.intact(region, c.pool)) return false;
  call_inputs(a, l, region, c, s.inputs);
  s.spec = pools.spec(c.pool);
  return true;
}
}  // namespace

bool call_reservoir::offer(const arena_layout& a, const slot_layout& l, const std::vector<arena_call>& calls,
                           uint32_t pair, const uint8_t* region, const pool_refresher& pools,
                           std::mt19937_64& rng) {
  if (calls.empty() || size_ == 0) return true;
  ++blocks_;
  if (pair_blocks_.size() <= pair) {
    pair_blocks_.resize(pair + 1, 0);
    pair_calls_.resize(pair + 1, 0);
  }
  const uint64_t before = pair_calls_[pair];
  pair_calls_[pair] += calls.size();
  // The block's last call, where its process has now made more calls than any other had.
  if (!latest_ || pair_calls_[pair] > latest_->ordinal) {
    if (!latest_) latest_.emplace();
    if (!keep_call(a, l, calls.back(), blocks_, pair, pair_calls_[pair], region, pools, *latest_)) return false;
  }
  stratum& st = pair_blocks_[pair]++ == 0 ? first_ : later_;
  ++st.blocks;
  size_t slot = st.kept.size();
  if (st.kept.size() >= size_) {
    slot = rng() % st.blocks;
    if (slot >= size_) return true;
  }
  if (slot == st.kept.size()) st.kept.emplace_back();
  const size_t i = rng() % calls.size();
  return keep_call(a, l, calls[i], blocks_, pair, before + i + 1, region, pools, st.kept[slot]);
}

std::vector<const call_sample*> call_reservoir::samples(std::mt19937_64& rng) const {
  // A uniform pick of `n` of a stratum's kept calls: a uniform sample of a uniform sample.
  auto pick = [&rng](const stratum& st, size_t n, std::vector<const call_sample*>& out) {
    std::vector<size_t> order(st.kept.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < n && i < order.size(); ++i) out.push_back(&st.kept[order[i]]);
  };
  const size_t from_first = first_.kept.empty() ? 0 : 1;
  const size_t from_later = std::min(later_.kept.size(), size_ - std::min(size_, from_first));
  std::vector<const call_sample*> out;
  pick(later_, from_later, out);
  pick(first_, size_ - out.size(), out);
  // The latest call first (the likeliest to be stale), unless the sample holds it already.
  if (latest_) {
    const bool held = std::any_of(out.begin(), out.end(), [this](const call_sample* s) {
      return s->block == latest_->block && s->call.area == latest_->call.area;
    });
    if (!held) out.insert(out.begin(), &*latest_);
  }
  return out;
}

}  // namespace lathe::gate
