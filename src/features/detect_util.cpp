#include "features/detect_util.h"

#include <algorithm>

namespace lathe::agent::rules::detail {

detection& detection_set::add(std::string_view name, std::string_view locus, std::string evidence) {
  for (auto& [d, n] : items_)
    if (d.what.name == name && d.what.locus == locus) {
      ++n;
      return d;
    }
  detection d;
  d.what.name = std::string(name);
  d.what.locus = std::string(locus);
  d.what.method = method_;
  d.evidence = std::move(evidence);
  items_.emplace_back(std::move(d), 1);
  return items_.back().first;
}

int32_t detection_set::count(const detection& d) const {
  for (const auto& [x, n] : items_)
    if (&x == &d) return n;
  return 0;
}

std::vector<detection> detection_set::take(std::string_view unit) {
  std::vector<detection> out;
  out.reserve(items_.size());
  for (auto& [d, n] : items_) {
    if (n > 1) d.evidence += " (" + std::to_string(n) + " " + std::string(unit) + ")";
    out.push_back(std::move(d));
  }
  items_.clear();
  return out;
}

void keep_max_param(detection& d, const std::string& key, int64_t value) {
  auto it = d.what.params.find(key);
  if (it == d.what.params.end() || std::stoll(it->second) < value)
    d.what.params[key] = std::to_string(value);
}

void add_param_item(detection& d, const std::string& key, std::string_view value) {
  std::string& list = d.what.params[key];
  for (size_t start = 0; start < list.size();) {
    const size_t end = std::min(list.find(',', start), list.size());
    if (std::string_view(list).substr(start, end - start) == value) return;
    start = end + 1;
  }
  if (!list.empty()) list += ",";
  list += value;
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace lathe::agent::rules::detail
