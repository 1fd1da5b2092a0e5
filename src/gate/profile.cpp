// Nsight Compute as lathe uses it: finding it, the command, and reading its raw CSV page.
// Metric names, options and the CSV layout follow the Nsight Compute documentation (Kernel
// Profiling Guide: metrics structure, warp scheduler states; CLI: --csv, --page raw,
// --print-units, --clock-control, --target-processes, --kernel-name regex:).
#include "gate/profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <tuple>

#include "gate/process.h"
#include "core/lines.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

// ---- the metric list ------------------------------------------------------------------------
// Throughputs are "% of peak sustained" over the elapsed cycles: ncu's speed-of-light figures.
// Achieved occupancy is over active cycles (an SM with no work does not lower it). Stalls are
// ncu's Warp State figures (the WarpStateStats section and its CPIStall rules use these): for
// each reason, the cycles between two issued instructions that a warp spent stalled for it; they
// add up to smsp__average_warp_latency_per_inst_issued, so each reason's share can be shown.
// The PC-sampling stall counters (smsp__pcsamp_warps_issue_stalled_*) need a sampling pass and
// count samples, not cycles, so they are not used.
constexpr const char* duration_metric = "gpu__time_duration.sum";
constexpr const char* device_metric = "device__attribute_display_name";
constexpr const char* stall_prefix = "smsp__average_warps_issue_stalled_";
constexpr const char* stall_suffix = "_per_issue_active.ratio";

struct fixed_metric {
  const char* name;
  profile_figure figure;
};
constexpr fixed_metric fixed_metrics[] = {
    {duration_metric, profile_figure::duration},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", profile_figure::compute_throughput},
    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
     profile_figure::memory_throughput},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", profile_figure::dram_throughput},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", profile_figure::achieved_occupancy},
    {"lts__t_sector_hit_rate.pct", profile_figure::l2_hit_rate},
    {"smsp__average_warp_latency_per_inst_issued.ratio", profile_figure::cycles_per_issue},
    {device_metric, profile_figure::device_name},
};

// The warp scheduler states of Volta and later (Kernel Profiling Guide, "Warp Scheduler
// States"), "selected" included so that the reasons add up to the cycles per issue.
// clang-format off
constexpr const char* stall_reasons[] = {
    "barrier",      "branch_resolving", "dispatch_stall", "drain",           "imc_miss",
    "lg_throttle",  "long_scoreboard",  "math_pipe_throttle", "membar",      "mio_throttle",
    "misc",         "no_instruction",   "not_selected",   "selected",        "short_scoreboard",
    "sleeping",     "tex_throttle",     "wait",
};
// clang-format on

std::optional<profile_figure> figure_of(const std::string& name, std::string* reason) {
  for (const auto& m : fixed_metrics)
    if (name == m.name) return m.figure;
  const std::string_view p = stall_prefix, s = stall_suffix;
  if (name.size() > p.size() + s.size() && name.starts_with(p) && name.ends_with(s)) {
    if (reason) *reason = name.substr(p.size(), name.size() - p.size() - s.size());
    return profile_figure::stall;
  }
  return std::nullopt;
}

bool executable(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

// "2024.3.2.0" < "2025.1.0.0": numeric, field by field; non-numeric tails compare as text.
bool version_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) &&
        std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string x = a.substr(i, ie - i), y = b.substr(j, je - j);
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// The newest <dir>/<entry matching prefix>/ncu.
std::optional<fs::path> newest_under(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  std::optional<fs::path> best;
  std::string best_version;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with(prefix) || !executable(e.path() / "ncu")) continue;
    const std::string version = name.substr(prefix.size());
    if (!best || version_less(best_version, version)) {
      best = e.path() / "ncu";
      best_version = version;
    }
  }
  return best;
}

// ---- CSV ----------------------------------------------------------------------------------

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' '))
    s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// Calls f on every line of `text`, trimmed, empty ones included.
template <class F>
void for_each_line(std::string_view text, F f) {
  for (std::string_view line : split_lines(text)) f(trim(line));
}

// One CSV record on one line (ncu quotes every field; a quote inside is doubled).
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(field));
      field.clear();
    } else {
      field += c;
    }
  }
  out.push_back(std::move(field));
  return out;
}

// "1,234.5" -> 1234.5 (ncu groups thousands with commas); "n/a", "" and text -> nullopt.
std::optional<double> number(std::string_view s) {
  std::string digits;
  for (char c : trim(s))
    if (c != ',') digits += c;
  if (digits.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

// "(8192, 1, 1)" -> {8192, 1, 1}; missing parts stay 0.
std::array<int64_t, 3> dims(std::string_view s) {
  std::array<int64_t, 3> d{};
  size_t k = 0;
  for (size_t i = 0; i < s.size() && k < 3;) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
      if (ec != std::errc()) break;
      d[k++] = v;
      i = static_cast<size_t>(end - s.data());
    } else {
      ++i;
    }
  }
  return d;
}

// Seconds per one unit of a duration as ncu prints it; nullopt for what is not a time.
std::optional<double> seconds_per(std::string_view unit) {
  static const std::map<std::string_view, double> scale = {
      {"nsecond", 1e-9}, {"ns", 1e-9}, {"usecond", 1e-6}, {"us", 1e-6},
      {"msecond", 1e-3}, {"ms", 1e-3}, {"second", 1.0},   {"s", 1.0}};
  auto it = scale.find(trim(unit));
  if (it == scale.end()) return std::nullopt;
  return it->second;
}

struct table {
  std::vector<std::string> header, units;
  std::vector<std::vector<std::string>> rows;
};

result<table> read_table(std::string_view text) {
  table t;
  bool have_header = false, have_units = false;
  for_each_line(text, [&](std::string_view line) {
    // Only quoted records belong to the table: ==PROF== / ==WARNING== lines and whatever the
    // profiled program printed are interleaved with it.
    if (line.empty() || line.front() != '"') return;
    auto fields = split_csv(line);
    if (!have_header) {
      if (fields.empty() || fields.front() != "ID") return;
      t.header = std::move(fields);
      have_header = true;
    } else if (fields.size() != t.header.size()) {
      return;
    } else if (!have_units) {
      t.units = std::move(fields);
      have_units = true;
    } else {
      t.rows.push_back(std::move(fields));
    }
  });
  if (!have_header)
    return fail(errc::parse_error,
                "no Nsight Compute table in the output (no header row starting with \"ID\")");
  if (!have_units)
    return fail(errc::parse_error, "the Nsight Compute table has no units row after its header");
  return t;
}

int column(const table& t, std::string_view name) {
  for (size_t i = 0; i < t.header.size(); ++i)
    if (t.header[i] == name) return static_cast<int>(i);
  return -1;
}

void fill_figures(profiled_kernel& k) {
  for (const auto& [name, value] : k.metrics) {
    std::string reason;
    auto f = figure_of(name, &reason);
    if (!f) continue;
    switch (*f) {
      case profile_figure::duration: {
        auto u = k.units.find(name);
        // Base units for a duration are nanoseconds (--print-units base).
        auto per = seconds_per(u == k.units.end() || u->second.empty() ? "nsecond" : u->second);
        if (per) k.duration_seconds = value * *per;
        break;
      }
      case profile_figure::compute_throughput:
        k.compute_throughput_pct = value;
        break;
      case profile_figure::memory_throughput:
        k.memory_throughput_pct = value;
        break;
      case profile_figure::dram_throughput:
        k.dram_throughput_pct = value;
        break;
      case profile_figure::achieved_occupancy:
        k.achieved_occupancy_pct = value;
        break;
      case profile_figure::l2_hit_rate:
        k.l2_hit_rate_pct = value;
        break;
      case profile_figure::cycles_per_issue:
        k.cycles_per_issue = value;
        break;
      case profile_figure::stall:
        k.stalls.push_back({reason, value});
        break;
      case profile_figure::device_name:
        break;
    }
  }
  std::stable_sort(k.stalls.begin(), k.stalls.end(), [](const warp_stall& a, const warp_stall& b) {
    return a.cycles_per_issue > b.cycles_per_issue;
  });
}

}  // namespace

std::string_view kernel_function_name(std::string_view name) {
  // The parameter list starts at the first '(' outside template arguments that does not open
  // "(anonymous namespace)".
  constexpr std::string_view anonymous = "(anonymous namespace)";
  int depth = 0;
  size_t end = name.size();
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '<') {
      ++depth;
    } else if (c == '>') {
      if (depth > 0) --depth;
    } else if (c == '(' && depth == 0) {
      if (name.substr(i).starts_with(anonymous)) {
        i += anonymous.size() - 1;
        continue;
      }
      end = i;
      break;
    }
  }
  std::string_view s = trim(name.substr(0, end));
  // Template arguments at the end: "f<unsigned int>" -> "f".
  if (!s.empty() && s.back() == '>') {
    int d = 0;
    for (size_t i = s.size(); i-- > 0;) {
      if (s[i] == '>') {
        ++d;
      } else if (s[i] == '<' && --d == 0) {
        s = trim(s.substr(0, i));
        break;
      }
    }
  }
  // After the return type and the scopes.
  const size_t cut = s.find_last_of(": *&");
  return cut == std::string_view::npos ? s : s.substr(cut + 1);
}

bool is_helper_kernel(std::string_view name) {
  return kernel_function_name(name).starts_with(helper_kernel_prefix);
}

std::vector<profile_metric> profile_metrics(const std::string& arch) {
  std::vector<profile_metric> out;
  for (const auto& m : fixed_metrics) out.push_back({m.name, m.figure, {}});
  std::vector<std::string> reasons(std::begin(stall_reasons), std::end(stall_reasons));
  // Waiting on a warpgroup MMA (wgmma): a Hopper state.
  if (arch.starts_with("sm_90")) reasons.push_back("gmma");
  std::sort(reasons.begin(), reasons.end());
  for (const auto& r : reasons)
    out.push_back({std::string(stall_prefix) + r + stall_suffix, profile_figure::stall, r});
  return out;
}

std::optional<fs::path> find_ncu(std::string_view path_env, const fs::path& root) {
  for (size_t at = 0; at <= path_env.size();) {
    size_t colon = path_env.find(':', at);
    std::string_view dir =
        path_env.substr(at, colon == std::string_view::npos ? path_env.npos : colon - at);
    at = colon == std::string_view::npos ? path_env.size() + 1 : colon + 1;
    if (dir.empty()) continue;  // an empty entry means ".": not a place to pick a profiler from
    const fs::path p = fs::path(dir) / "ncu";
    if (executable(p)) return p;
  }
  if (const fs::path p = root / "usr/local/cuda/bin/ncu"; executable(p)) return p;
  if (auto p = newest_under(root / "opt/nvidia/nsight-compute", "")) return p;
  if (auto p = newest_under(root / "usr/local/cuda", "nsight-compute-")) return p;
  return std::nullopt;
}

std::string ncu_search_description() {
  return "PATH, /usr/local/cuda/bin/ncu, /opt/nvidia/nsight-compute/*/ncu, "
         "/usr/local/cuda/nsight-compute-*/ncu";
}

std::string ncu_version(const fs::path& ncu) {
  tool_result r = run_tool({ncu.string(), "--version"}, 60);
  if (r.exit_code != 0) return {};
  std::string version, first;
  for_each_line(r.output, [&](std::string_view line) {
    if (version.empty() && line.starts_with("Version ")) version = line.substr(8);
    if (first.empty() && !line.empty()) first = line;
  });
  if (!version.empty()) return version;
  return first;
}

std::vector<std::string> ncu_command(const fs::path& ncu, const std::string& arch,
                                     const std::vector<std::string>& app) {
  std::string metrics;
  for (const auto& m : profile_metrics(arch)) metrics += (metrics.empty() ? "" : ",") + m.name;
  // clang-format off
  std::vector<std::string> cmd = {
      ncu.string(),
      // The kernel runs in a worker process that profile-run starts.
      "--target-processes", "all",
      // Clocks as they are when lathe times (ncu's default, base, locks them lower).
      "--clock-control", "none",
      // Each replay pass starts from flushed caches, as a timed call does (the gate rotates
      // buffers past the L2), and restores memory so that every pass computes the same thing.
      "--cache-control", "all",
      "--replay-mode", "kernel",
      // No --kernel-name filter: a negative lookahead (to leave out lathe's helpers) depends on
      // the regex dialect of ncu's matcher, and one that matches nothing profiles nothing, with
      // only "No kernels were profiled" to show for it. A helper the worker launches (poisoning
      // outputs, say) costs a few replays and is dropped when the table is read.
      "--csv",
      "--page", "raw",
      "--print-units", "base",
      "--metrics", metrics};
  // clang-format on
  cmd.insert(cmd.end(), app.begin(), app.end());
  return cmd;
}

result<std::vector<profiled_kernel>> parse_ncu_csv(std::string_view text) {
  auto t = read_table(text);
  if (!t) return tl::unexpected(t.error());
  const int name_col = column(*t, "Kernel Name");
  const int grid_col = column(*t, "Grid Size"), block_col = column(*t, "Block Size");
  if (name_col < 0)
    return fail(errc::parse_error,
                "the Nsight Compute table has no 'Kernel Name' column "
                "(not the raw page?)");
  if (t->rows.empty())
    return fail(errc::parse_error,
                "Nsight Compute profiled no kernel: none was launched, or every launch was "
                "filtered out");
  // The fixed columns that are not metrics (ID, Process ID, Kernel Name, Context, Stream, Block
  // Size, Grid Size, Device, CC…) carry no unit and no dotted name; metrics have both a name with
  // "__" and, as numbers, values.
  auto is_metric = [&](size_t i) { return t->header[i].find("__") != std::string::npos; };

  struct acc {
    profiled_kernel k;
    std::map<std::string, std::pair<double, uint32_t>> sums;
  };
  std::vector<acc> groups;
  size_t helpers = 0;
  for (const auto& row : t->rows) {
    const std::string& name = row[static_cast<size_t>(name_col)];
    if (is_helper_kernel(name)) {
      ++helpers;
      continue;
    }
    auto grid = grid_col >= 0 ? dims(row[static_cast<size_t>(grid_col)]) : std::array<int64_t, 3>{};
    auto block =
        block_col >= 0 ? dims(row[static_cast<size_t>(block_col)]) : std::array<int64_t, 3>{};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const acc& a) {
      return a.k.name == name && a.k.grid == grid && a.k.block == block;
    });
    if (it == groups.end()) {
      groups.push_back({});
      it = groups.end() - 1;
      it->k.name = name;
      it->k.grid = grid;
      it->k.block = block;
    }
    ++it->k.launches;
    for (size_t i = 0; i < row.size(); ++i) {
      if (!is_metric(i)) continue;
      auto v = number(row[i]);
      if (!v) continue;
      auto& [sum, n] = it->sums[t->header[i]];
      sum += *v;
      ++n;
      it->k.units[t->header[i]] = t->units[i];
    }
  }
  if (groups.empty())
    return fail(errc::parse_error, "Nsight Compute profiled only lathe's own helper kernels (" +
                                       std::to_string(helpers) +
                                       " launches), none of the kernel's");
  std::vector<profiled_kernel> out;
  for (auto& g : groups) {
    for (const auto& [name, s] : g.sums) g.k.metrics[name] = s.first / s.second;
    fill_figures(g.k);
    out.push_back(std::move(g.k));
  }
  return out;
}

ncu_device parse_ncu_device(std::string_view text) {
  ncu_device d;
  auto t = read_table(text);
  if (!t || t->rows.empty()) return d;
  const auto& row = t->rows.front();
  if (int c = column(*t, device_metric); c >= 0) d.name = row[static_cast<size_t>(c)];
  if (int c = column(*t, "CC"); c >= 0) {
    std::string cc;
    for (char ch : row[static_cast<size_t>(c)])
      if (std::isdigit(static_cast<unsigned char>(ch))) cc += ch;
    if (!cc.empty()) d.arch = "sm_" + cc;
  }
  return d;
}

std::string ncu_failure(std::string_view output) {
  // ncu's own error (ERR_NVGPUCTRPERM, a metric it cannot collect) says most; then the child's
  // message (the kernel did not load, the worker crashed); ncu's "the application returned an
  // error code" only repeats that the child failed.
  std::string error, generic, own, last;
  for_each_line(output, [&](std::string_view line) {
    if (line.empty()) return;
    if (line.find("==ERROR==") != std::string_view::npos) {
      const bool summary = line.find("returned an error code") != std::string_view::npos;
      std::string& slot = summary ? generic : error;
      if (slot.empty()) slot = line;
    }
    if (own.empty() && line.starts_with("lathe profile-run:")) own = line;
    last = line;
  });
  for (const std::string* s : {&error, &own, &generic, &last})
    if (!s->empty()) return *s;
  return "the profiler printed nothing";
}

}  // namespace lathe::gate
