#include "search/archive.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace lathe::search {

int descriptor::bin_of(double v) const {
  return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin());
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep))
    if (!part.empty()) out.push_back(part);
  return out;
}

result<double> number(const std::string& s, const std::string& what) {
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    return fail(errc::invalid_argument, what + ": '" + s + "' is not a number");
  }
}

}  // namespace

result<std::vector<descriptor>> parse_descriptors(const std::string& text) {
  const std::string t = text.empty() ? "complexity:40,80,160,320;features:2,4,6" : text;
  std::vector<descriptor> out;
  for (const auto& item : split(t, ';')) {
    const size_t colon = item.find(':', item.rfind("feature:", 0) == 0 ? 8 : 0);
    descriptor d;
    d.name = item.substr(0, colon);
    if (d.name == "complexity") d.kind = descriptor_kind::complexity;
    else if (d.name == "score") d.kind = descriptor_kind::score;
    else if (d.name == "features") d.kind = descriptor_kind::features;
    else if (d.name.rfind("feature:", 0) == 0 && d.name.size() > 8) {
      d.kind = descriptor_kind::feature;
      d.feature = d.name.substr(8);
    } else
      return fail(errc::invalid_argument, "unknown descriptor '" + d.name +
                                              "' (complexity, score, features, feature:<name>)");
    if (colon == std::string::npos) {
      if (d.kind == descriptor_kind::feature) d.edges = {0.5};  // absent | present
      else return fail(errc::invalid_argument, "descriptor '" + d.name + "' needs bin edges (" + d.name + ":a,b,…)");
    } else {
      for (const auto& e : split(item.substr(colon + 1), ',')) {
        auto v = number(e, "descriptor '" + d.name + "'");
        if (!v) return tl::unexpected(v.error());
        if (!d.edges.empty() && *v <= d.edges.back())
          return fail(errc::invalid_argument, "descriptor '" + d.name + "': edges must ascend");
        d.edges.push_back(*v);
      }
    }
    for (const auto& other : out)
      if (other.name == d.name) return fail(errc::invalid_argument, "descriptor '" + d.name + "' given twice");
    out.push_back(std::move(d));
  }
  if (out.empty()) return fail(errc::invalid_argument, "no descriptor");
  return out;
}

double composite_score(const verdict_summary& v) {
  if (!v.compiles) return 0.0;
  if (!v.correct) return 0.25;
  return 1.0 + (v.speedup ? std::max(0.0, *v.speedup) : 1.0);
}

const char* to_string(placement p) {
  switch (p) {
    case placement::new_cell: return "new_cell";
    case placement::contest: return "contest";
    case placement::kept: return "kept";
    case placement::failed: return "failed";
  }
  return "?";
}

result<sampling> parse_sampling(const std::string& text) {
  sampling s;
  for (const auto& kv : split(text, ',')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return fail(errc::invalid_argument, "sampling: '" + kv + "' is not key=value");
    const std::string k = kv.substr(0, eq);
    auto v = number(kv.substr(eq + 1), "sampling " + k);
    if (!v) return tl::unexpected(v.error());
    if (*v < 0) return fail(errc::invalid_argument, "sampling " + k + " must not be negative");
    if (k == "exploration") s.exploration = *v;
    else if (k == "exploitation") s.exploitation = *v;
    else if (k == "elite") s.elite = *v;
    else if (k == "top") s.top_k = std::max(1, static_cast<int32_t>(*v));
    else if (k == "inspirations") s.inspirations = static_cast<int32_t>(*v);
    else return fail(errc::invalid_argument, "sampling: unknown key '" + k + "' (exploration, exploitation, elite, top, inspirations)");
  }
  const double sum = s.exploration + s.exploitation + s.elite;
  if (sum <= 0) return fail(errc::invalid_argument, "sampling: the ratios sum to 0");
  s.exploration /= sum, s.exploitation /= sum, s.elite /= sum;
  return s;
}

archive::archive(std::vector<descriptor> d, int32_t islands)
    : desc_(std::move(d)), cells_(static_cast<size_t>(std::max(1, islands))) {}

int64_t archive::cell_of(const std::vector<double>& values) const {
  int64_t cell = 0;
  for (size_t i = 0; i < desc_.size(); ++i)
    cell = cell * desc_[i].bins() + desc_[i].bin_of(i < values.size() ? values[i] : 0.0);
  return cell;
}

placement archive::place(int32_t island, double score, const std::vector<double>& values) const {
  const elite* in = incumbent(island, cell_of(values));
  if (!in) return placement::new_cell;
  return score > in->score ? placement::contest : placement::kept;
}

void archive::put(int32_t island, const elite& e) { cells_.at(static_cast<size_t>(island))[cell_of(e.values)] = e; }

const elite* archive::incumbent(int32_t island, int64_t cell) const {
  const auto& m = cells_.at(static_cast<size_t>(island));
  auto it = m.find(cell);
  return it == m.end() ? nullptr : &it->second;
}

std::vector<const elite*> archive::elites(int32_t island) const {
  std::vector<const elite*> out;
  for (const auto& [cell, e] : cells_.at(static_cast<size_t>(island))) out.push_back(&e);
  return out;
}

const elite* archive::best(int32_t island) const {
  const elite* b = nullptr;
  for (const elite* e : elites(island))
    if (!b || e->score > b->score) b = e;
  return b;
}

const elite* archive::best() const {
  const elite* b = nullptr;
  for (int32_t i = 0; i < islands(); ++i)
    if (const elite* e = best(i); e && (!b || e->score > b->score)) b = e;
  return b;
}

size_t archive::size() const {
  size_t n = 0;
  for (const auto& m : cells_) n += m.size();
  return n;
}

const elite* archive::parent(int32_t island, const sampling& s, std::mt19937_64& rng) const {
  std::vector<const elite*> all = elites(island);
  if (all.empty()) return nullptr;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double r = u(rng);
  if (r < s.exploration) return all[std::uniform_int_distribution<size_t>(0, all.size() - 1)(rng)];
  if (r < s.exploration + s.exploitation) {
    double total = 0;
    for (const elite* e : all) total += e->score + 1e-9;
    double at = u(rng) * total;
    for (const elite* e : all) {
      at -= e->score + 1e-9;
      if (at <= 0) return e;
    }
    return all.back();
  }
  std::stable_sort(all.begin(), all.end(), [](const elite* a, const elite* b) { return a->score > b->score; });
  const size_t k = std::min(all.size(), static_cast<size_t>(std::max(1, s.top_k)));
  return all[std::uniform_int_distribution<size_t>(0, k - 1)(rng)];
}

std::vector<const elite*> archive::inspirations(int32_t island, const elite& parent, const sampling& s) const {
  std::vector<const elite*> out;
  const int64_t own = cell_of(parent.values);
  for (const auto& [cell, e] : cells_.at(static_cast<size_t>(island)))
    if (cell != own && e.hash != parent.hash) out.push_back(&e);
  std::stable_sort(out.begin(), out.end(), [](const elite* a, const elite* b) { return a->score > b->score; });
  if (out.size() > static_cast<size_t>(std::max(0, s.inspirations))) out.resize(static_cast<size_t>(std::max(0, s.inspirations)));
  return out;
}

std::vector<std::pair<int32_t, elite>> archive::migrants() const {
  std::vector<std::pair<int32_t, elite>> out;
  const int32_t n = islands();
  if (n < 2) return out;
  for (int32_t i = 0; i < n; ++i)
    if (const elite* b = best(i)) out.push_back({(i + 1) % n, *b});
  return out;
}

}  // namespace lathe::search
