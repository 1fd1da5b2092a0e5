#include "kernel_io.h"

#include <fstream>

#include "spec/bundle.h"

namespace lathe::mock {
namespace {

bool is_cuda_path(const std::string& p) {
  return p.ends_with(".cu") || p.ends_with(".cuh");
}

}  // namespace

bool operator==(const mock_bundle& a, const mock_bundle& b) {
  return a.files == b.files && a.flags == b.flags;
}

tl::expected<mock_bundle, std::string> bundle_from_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::exists(dir / "kernel.toml", ec))
    return tl::unexpected("no kernel.toml in " + dir.string());
  auto b = load_bundle(dir);
  if (!b) return tl::unexpected(b.error().message);
  mock_bundle m;
  m.files = b->sources;
  m.flags = b->manifest.flags;
  m.flags_known = true;
  m.entry = b->manifest.entry;
  for (const auto& [path, text] : m.files) m.cuda = m.cuda || is_cuda_path(path);
  m.cuda = m.cuda || b->manifest.lang == language::cuda;
  return m;
}

tl::expected<mock_bundle, std::string> bundle_from_text(std::string_view text) {
  const kernel_text k = read_kernel(text);
  if (k.files.empty()) return tl::unexpected(std::string("no '=== FILE <path> ===' section"));
  mock_bundle m;
  for (const auto& f : k.files) {
    m.files[f.path] = f.text;
    m.cuda = m.cuda || is_cuda_path(f.path);
  }
  m.flags = k.flags;
  m.flags_known = k.flags_shown;
  m.entry = !k.entry.empty() ? k.entry : k.files.front().path;
  m.numbered = k.numbered;
  return m;
}

tl::expected<mock_bundle, std::string> operation_kernel(const prompt& p,
                                                        const std::filesystem::path& dir,
                                                        bool prefer_dir) {
  if (prefer_dir)
    if (auto d = bundle_from_dir(dir)) return d;
  const auto value = field(p.user, "kernel", p.operation);
  auto t = bundle_from_text(value ? *value : p.user);
  if (t) {
    // A flags line may sit outside the kernel field; the directory's manifest knows for sure.
    if (auto d = bundle_from_dir(dir); d && !t->flags_known) {
      t->flags = d->flags;
      t->flags_known = true;
    }
    return t;
  }
  if (auto d = bundle_from_dir(dir)) return d;
  return tl::unexpected("no kernel: " + t.error() +
                        " in the prompt, and no kernel.toml in the working directory");
}

tl::expected<void, std::string> write_changed_files(const mock_bundle& before,
                                                    const mock_bundle& after,
                                                    const std::filesystem::path& dir) {
  for (const auto& [path, text] : after.files) {
    const auto it = before.files.find(path);
    if (it != before.files.end() && it->second == text) continue;
    const auto target = dir / path;
    std::error_code ec;
    if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return tl::unexpected("cannot write " + target.string());
  }
  return {};
}

}  // namespace lathe::mock
