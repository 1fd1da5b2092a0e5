// Kernel bundles (docs/tasks.md): a directory with kernel.toml and its sources, or a bare
// .cpp/.cc/.cu file. A bundle's identity is the hash of its canonical manifest and its files,
// never of where it lies, so the same kernel found in two places is one kernel.
#include <cstdint>
#include "spec/bundle.h"
#include "spec/python_knobs.h"

#if __has_include(<toml++/toml.hpp>)
#include <toml++/toml.hpp>
#else
#include <toml++/toml.h>  // Debian's libtomlplusplus-dev 3.3 ships only toml.h
#endif

#include <algorithm>
#include <cctype>
#include <fstream>
#include <initializer_list>
#include <regex>
#include <set>
#include <sstream>

#include "core/hash.h"
#include "spec/toml_read.h"

namespace lathe {
namespace {

using detail::is_identifier;
using detail::line_of;

namespace fs = std::filesystem;

// Bundles hold sources, not data: a larger file is almost certainly a mistake (a build output, a
// data set) and would be hashed, stored and sent to every worker.
constexpr uint64_t max_file_bytes = uint64_t{16} << 20;
constexpr uint64_t max_bundle_bytes = uint64_t{64} << 20;

bool is_source(const fs::path& p) {
  const auto ext = p.extension().string();
  return ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".cu";
}

language language_of(const fs::path& p) {
  if (p.extension() == ".py") return language::python;
  return p.extension() == ".cu" ? language::cuda : language::cpp;
}

// A relative path that stays inside the bundle, normalized to generic form ("./a/../b.h" ->
// "b.h"); empty when it escapes or is absolute.
std::string contained(const std::string& rel) {
  const fs::path p = fs::path(rel).lexically_normal();
  if (rel.empty() || p.is_absolute() || p.has_root_name() || p.empty()) return {};
  for (const auto& part : p)
    if (part == "..") return {};
  std::string s = p.generic_string();
  return s == "." ? std::string{} : s;
}

// After symlinks: does `root/rel` still lie under `root`?
bool inside(const fs::path& root, const std::string& rel) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(root, ec);
  const fs::path f = fs::weakly_canonical(root / rel, ec);
  if (ec) return false;
  const auto rel_path = f.lexically_relative(r);
  return !rel_path.empty() && *rel_path.begin() != "..";
}

result<std::string> read_file(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  if (ec) return fail(errc::io_error, p.string() + ": " + ec.message());
  if (size > max_file_bytes)
    return fail(errc::invalid_argument, p.string() + ": " + std::to_string(size) +
                                            " bytes; bundle files are sources (at most 16 MiB)");
  std::ifstream in(p, std::ios::binary);
  if (!in) return fail(errc::io_error, p.string() + ": cannot open for reading");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail(errc::io_error, p.string() + ": read error");
  return ss.str();
}

class manifest_reader {
 public:
  explicit manifest_reader(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  tl::unexpected<error> err(uint32_t line, const std::string& what) const {
    return fail(errc::parse_error, file_ + ":" + std::to_string(line) + ": " + what);
  }
  result<std::optional<std::vector<std::string>>> str_array(const toml::table& t,
                                                            std::string_view key) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return std::optional<std::vector<std::string>>{};
    if (!n->is_array())
      return err(line_of(*n), "'" + std::string(key) + "' must be an array of strings");
    std::vector<std::string> out;
    for (const toml::node& e : *n->as_array()) {
      if (!e.is_string())
        return err(line_of(e), "'" + std::string(key) + "' must hold strings only");
      out.push_back(e.as_string()->get());
    }
    return std::optional<std::vector<std::string>>{std::move(out)};
  }
  result<std::optional<std::string>> str(const toml::table& t, std::string_view key) const {
    const toml::node* n = t.get(key);
    if (n == nullptr) return std::optional<std::string>{};
    if (!n->is_string()) return err(line_of(*n), "'" + std::string(key) + "' must be a string");
    return std::optional<std::string>{n->as_string()->get()};
  }

 private:
  std::string file_;
};

#define LATHE_TRY(var, expr) \
  auto var = (expr);         \
  if (!var) return tl::unexpected(var.error())

// Every regular file under `root` but kernel.toml and hidden entries (editor swap files, .git),
// relative, sorted.
result<std::vector<std::string>> list_files(const fs::path& root) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return fail(errc::io_error, root.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return fail(errc::io_error, root.string() + ": " + ec.message());
    const fs::path& p = it->path();
    if (p.filename().string().starts_with(".")) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = p.lexically_relative(root).generic_string();
    if (rel == "kernel.toml") continue;
    if (!inside(root, rel))
      return fail(errc::invalid_argument,
                  (root / rel).string() + ": a link leading outside the bundle directory");
    out.push_back(rel);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// [defines], then [tune] (whose defaults may come from the defines).
result<void> read_defines_and_tune(const toml::table& t, const manifest_reader& r, kernel_manifest& m) {
  if (const toml::node* n = t.get("defines")) {
    if (!n->is_table()) return r.err(line_of(*n), "'defines' must be a table");
    for (const auto& [k, v] : *n->as_table()) {
      const std::string key(k.str());
      if (!is_identifier(key))
        return r.err(line_of(v), "defines: '" + key + "' is not a macro name");
      if (v.is_string())
        m.defines[key] = v.as_string()->get();
      else if (v.is_integer())
        m.defines[key] = std::to_string(v.as_integer()->get());
      else
        return r.err(line_of(v), "defines: '" + key + "' must be a string or an integer");
    }
  }
  if (const toml::node* n = t.get("tune")) {
    auto tune = detail::read_tune_section(*n, m.defines, r.file());
    if (!tune) return tl::unexpected(tune.error());
    m.tune = std::move(*tune);
  }
  return {};
}

result<kernel_manifest> read_manifest(const fs::path& root, const toml::table& t,
                                      const manifest_reader& r) {
  for (const auto& [k, v] : t) {
    static constexpr std::string_view allowed[] = {"language", "entry",     "files", "flags",
                                                   "defines",  "libraries", "isa",   "tune"};
    if (std::find(std::begin(allowed), std::end(allowed), k.str()) == std::end(allowed))
      return r.err(line_of(v), "unknown key '" + std::string(k.str()) +
                                   "' (expected one of: language, entry, files, flags, defines, "
                                   "libraries, isa, tune)");
  }
  kernel_manifest m;
  LATHE_TRY(files, r.str_array(t, "files"));
  if (*files) {
    const uint32_t line = line_of(*t.get("files"));
    std::set<std::string> seen;
    for (const auto& f : **files) {
      const std::string norm = contained(f);
      if (norm.empty()) return r.err(line, "files: '" + f + "' escapes the bundle directory");
      if (norm == "kernel.toml")
        return r.err(line, "files: kernel.toml is the manifest, not a file");
      std::error_code ec;
      if (!fs::is_regular_file(root / norm, ec))
        return r.err(line, "files: '" + f + "' is missing (or not a regular file)");
      if (!inside(root, norm))
        return r.err(line, "files: '" + f + "' is a link leading outside the bundle directory");
      if (!seen.insert(norm).second) return r.err(line, "files: '" + f + "' is listed twice");
    }
    m.files.assign(seen.begin(), seen.end());  // sorted: order never matters to a build
  } else {
    LATHE_TRY(listed, list_files(root));
    m.files = std::move(*listed);
  }
  if (m.files.empty()) return r.err(1, "the bundle has no files");

  LATHE_TRY(entry, r.str(t, "entry"));
  if (*entry) {
    const std::string norm = contained(**entry);
    if (std::find(m.files.begin(), m.files.end(), norm) == m.files.end())
      return r.err(line_of(*t.get("entry")),
                   "entry '" + **entry + "' is not one of the bundle's files");
    m.entry = norm;
  } else {
    std::vector<std::string> sources;
    for (const auto& f : m.files)
      if (is_source(f)) sources.push_back(f);
    if (sources.size() != 1) {
      std::string list;
      for (const auto& s : sources) list += (list.empty() ? "" : ", ") + s;
      return r.err(1, "'entry' is required: the bundle has " + std::to_string(sources.size()) +
                          " source files" + (list.empty() ? "" : " (" + list + ")"));
    }
    m.entry = sources.front();
  }

  LATHE_TRY(lang, r.str(t, "language"));
  if (!*lang)
    m.lang = language_of(m.entry);
  else if (**lang == "cpp")
    m.lang = language::cpp;
  else if (**lang == "cuda")
    m.lang = language::cuda;
  else if (**lang == "python")
    m.lang = language::python;
  else
    return r.err(line_of(*t.get("language")), "unknown language '" + **lang + "' (cpp | cuda | python)");

  LATHE_TRY(flags, r.str_array(t, "flags"));
  m.flags = *flags ? **flags : std::vector<std::string>{"-O3"};
  LATHE_TRY(libs, r.str_array(t, "libraries"));
  if (*libs) {
    for (const auto& l : **libs) {
      // A library name, linked as -lNAME: anything else would smuggle flags past the screen.
      const bool ok = !l.empty() && l[0] != '-' && std::all_of(l.begin(), l.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '+' || c == '.' ||
               c == '-';
      });
      if (!ok)
        return r.err(line_of(*t.get("libraries")), "libraries: '" + l + "' is not a library name");
    }
    m.libraries = **libs;
  }
  LATHE_TRY(isa, r.str(t, "isa"));
  m.isa = isa->value_or("");
  if (auto d = read_defines_and_tune(t, r, m); !d) return tl::unexpected(d.error());
  return m;
}

}  // namespace

result<kernel_bundle> load_bundle(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "kernels/naive/"
  if (p.filename() == "kernel.toml" && fs::is_regular_file(p, ec)) p = p.parent_path();

  kernel_bundle b;
  b.origin = p;
  if (fs::is_regular_file(p, ec)) {
    if (!is_source(p) && p.extension() != ".py")
      return fail(errc::invalid_argument,
                  path.string() +
                      ": not a kernel bundle (a directory with kernel.toml, "
                      "or a .cpp/.cc/.cu/.py file)");
    LATHE_TRY(text, read_file(p));
    return bare_bundle(p, std::move(*text));
  }
  if (!fs::is_directory(p, ec))
    return fail(errc::not_found, path.string() + ": no such kernel bundle");

  b.name = p.filename().string();
  const fs::path manifest_file = p / "kernel.toml";
  const manifest_reader r(manifest_file.string());
  toml::table empty;
  toml::parse_result parsed;
  const toml::table* tbl = &empty;  // no kernel.toml: every field takes its default
  if (fs::exists(manifest_file, ec)) {
    LATHE_TRY(text, read_file(manifest_file));
    parsed = toml::parse(*text, manifest_file.string());
    if (!parsed)
      return r.err(parsed.error().source().begin.line > 0 ? parsed.error().source().begin.line : 1,
                   "TOML syntax: " + std::string(parsed.error().description()));
    tbl = &parsed.table();
  }
  LATHE_TRY(m, read_manifest(p, *tbl, r));
  b.manifest = std::move(*m);
  uint64_t total = 0;
  for (const auto& f : b.manifest.files) {
    LATHE_TRY(text, read_file(p / f));
    total += text->size();
    if (total > max_bundle_bytes)
      return fail(errc::invalid_argument, path.string() + ": bundle larger than 64 MiB");
    b.sources[f] = std::move(*text);
  }
  if (b.manifest.lang == language::python && !b.manifest.tune.empty()) {
    std::vector<std::string> given;  // [tune.default]'s names: a Python knob's default is its literal
    if (const toml::node* d = tbl->at_path("tune.default").node(); d && d->is_table())
      for (const auto& [k, v] : *d->as_table()) given.emplace_back(k.str());
    if (auto bound = bind_python_tunables(b, given); !bound)
      return r.err(line_of(*tbl->get("tune")), bound.error().message);
  }
  b.hash = bundle_hash(b);
  return b;
}

result<kernel_bundle> bare_bundle(const fs::path& file, std::string text) {
  if (!is_source(file) && file.extension() != ".py")
    return fail(errc::invalid_argument, file.string() + ": not a .cpp/.cc/.cu/.py file");
  if (text.size() > max_file_bytes)
    return fail(errc::invalid_argument, file.string() + ": " + std::to_string(text.size()) +
                                            " bytes; bundle files are sources (at most 16 MiB)");
  kernel_bundle b;
  b.origin = fs::absolute(file).lexically_normal();
  const std::string name = file.filename().string();
  b.name = file.stem().string();
  b.bare = true;
  b.manifest.lang = language_of(file);
  b.manifest.entry = name;
  b.manifest.files = {name};
  b.manifest.flags = {"-O3"};
  b.sources[name] = std::move(text);
  b.hash = bundle_hash(b);
  return b;
}

std::string bundle_hash(const kernel_bundle& b) {
  // Canonical serialization: a version tag, the manifest fields in a fixed order, then every
  // file (path, contents) sorted by path. Name, origin and `bare` are not part of identity.
  const kernel_manifest& m = b.manifest;
  hasher h;
  h.add("lathe.bundle/1");
  h.add("language").add(to_string(m.lang));
  h.add("entry").add(m.entry);
  h.add("flags").add(std::to_string(m.flags.size()));
  for (const auto& f : m.flags) h.add(f);
  h.add("defines").add(std::to_string(m.defines.size()));
  for (const auto& [k, v] : m.defines) h.add(k).add(v);
  h.add("libraries").add(std::to_string(m.libraries.size()));
  for (const auto& l : m.libraries) h.add(l);
  h.add("isa").add(m.isa);
  if (!m.tune.empty()) {  // only then: the hashes of bundles without tunables stay what they were
    h.add("tune").add(std::to_string(m.tune.params.size()));
    for (const auto& p : m.tune.params) {
      h.add(p.name).add(std::to_string(p.values.size()));
      for (int64_t v : p.values) h.add(std::to_string(v));
    }
    h.add("constraints").add(std::to_string(m.tune.constraints.size()));
    for (const auto& c : m.tune.constraints) h.add(c);
    for (const auto& [k, v] : m.tune.defaults) h.add(k).add(std::to_string(v));
  }
  h.add("files").add(std::to_string(b.sources.size()));
  for (const auto& [path, text] : b.sources) h.add(path).add(text);  // std::map: sorted
  return h.hex();
}

result<void> write_bundle(const kernel_bundle& b, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(errc::io_error, dir.string() + ": " + ec.message());
  toml::array files;
  for (const auto& [rel, text] : b.sources) {
    const std::string norm = contained(rel);
    if (norm.empty() || norm != rel || norm == "kernel.toml")
      return fail(errc::invalid_argument, "bundle file '" + rel + "' is not a plain relative path");
    const fs::path target = dir / norm;
    fs::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out) return fail(errc::io_error, target.string() + ": cannot write");
    files.push_back(rel);
  }
  if (!b.sources.count(b.manifest.entry))
    return fail(errc::invalid_argument,
                "bundle entry '" + b.manifest.entry + "' is not one of its files");
  // Every field explicit, so that loading the written bundle gives the same manifest and hash.
  toml::table t;
  t.insert("language", std::string(to_string(b.manifest.lang)));
  t.insert("entry", b.manifest.entry);
  t.insert("files", std::move(files));
  toml::array flags, libs;
  for (const auto& f : b.manifest.flags) flags.push_back(f);
  for (const auto& l : b.manifest.libraries) libs.push_back(l);
  t.insert("flags", std::move(flags));
  t.insert("libraries", std::move(libs));
  t.insert("isa", b.manifest.isa);
  toml::table defines;
  for (const auto& [k, v] : b.manifest.defines) defines.insert(k, v);
  t.insert("defines", std::move(defines));
  if (!b.manifest.tune.empty()) t.insert("tune", detail::tune_table(b.manifest.tune));
  std::ofstream out(dir / "kernel.toml", std::ios::trunc);
  out << "# written by lathe: kernel " << bundle_hash(b) << "\n" << t << "\n";
  if (!out) return fail(errc::io_error, (dir / "kernel.toml").string() + ": cannot write");
  return {};
}

std::string openmp_warning(const kernel_bundle& b) {
  if (b.manifest.lang != language::cpp) return {};
  for (const auto& f : b.manifest.flags)
    if (f == "-fopenmp" || f == "-fopenmp-simd") return {};
  static const std::regex pragma(R"((^|\n)[ \t]*#[ \t]*pragma[ \t]+omp\b)");
  for (const auto& [path, text] : b.sources)
    if (std::regex_search(text, pragma))
      return b.name + ": " + path + " uses #pragma omp, but the kernel is built without -fopenmp: the pragmas "
             "are ignored (one thread). " +
             (b.bare ? std::string("A bare file is built with -O3 only; make it a bundle (a folder with the file "
                                   "and a kernel.toml: entry = \"") + path + "\", flags = [\"-O3\", \"-fopenmp\"])"
                     : std::string("Add \"-fopenmp\" (or \"-fopenmp-simd\") to kernel.toml's flags")) +
             " (docs/tasks.md)";
  return {};
}

}  // namespace lathe
