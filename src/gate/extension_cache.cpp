#include "gate/extension_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <system_error>

#include "gate/cpu/files.h"
#include "gate/python_build.h"
#include "spec/safe_file.h"

namespace fs = std::filesystem;

namespace lathe::gate {
namespace {

constexpr uint64_t entry_cap = uint64_t{2} << 30;  // the modules of one build (CUDA ones are large)

// What an entry holds that is worth sharing, by name: a link or a device under one of these names
// fails the copy (copy_tree_beneath never follows one); anything else is left behind.
bool shared_part(const fs::path& rel, entry_kind) {
  const std::string s = rel.generic_string();
  if (s == "status" || s == "build.log" || s == "out") return true;
  return rel.parent_path() == "out" && extension_output(rel.filename());
}

// `from_root`/key copied to `to_root`/key through a fresh folder renamed into place (the first of
// two racing copies wins; the other's result is the same build).
bool copy_entry(const fs::path& from_root, const fs::path& to_root, const std::string& key, std::string& why) {
  const std::string tmp = "tmp-" + random_suffix();
  auto copied = copy_tree_beneath(from_root, key, to_root, tmp, entry_cap, shared_part);
  std::error_code ec;
  if (copied && !fs::is_regular_file(fs::symlink_status(to_root / tmp / "out/lathe-ext.json", ec)))
    copied = tl::unexpected(error{errc::io_error, "no out/lathe-ext.json"});
  if (!copied) {
    why = copied.error().message;
    (void)remove_tree(to_root / tmp);
    return false;
  }
  fs::rename(to_root / tmp, to_root / key, ec);
  if (ec) (void)remove_tree(to_root / tmp);
  return true;
}

}  // namespace

std::optional<fs::path> shared_extension_cache(std::string* why) {
  const char* v = std::getenv("LATHE_EXTENSION_CACHE");
  if (!v || !*v) return std::nullopt;
  std::error_code ec;
  const fs::path p = fs::absolute(v, ec);
  if (ec) return std::nullopt;
  if (!fs::exists(fs::symlink_status(p, ec))) {
    fs::create_directories(p, ec);
    if (!ec) fs::permissions(p, fs::perms::owner_all, ec);
  }
  struct stat st {};
  if (lstat(p.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
    if (why) *why = "LATHE_EXTENSION_CACHE=" + p.string() + " is not a folder of this user's (a link is not followed): not used";
    return std::nullopt;
  }
  return p;
}

bool import_extension(const fs::path& shared, const fs::path& ext_root, const std::string& key, std::string& note) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(shared / key, ec))) return false;  // a link is not read
  auto status = read_beneath(shared / key, "status", status_cap);
  if (!status || !status->starts_with("ok")) return false;
  std::string why;
  if (copy_entry(shared, ext_root, key, why)) return true;
  note += "[lathe] the shared extension " + (shared / key).string() + " is unusable (" + why + "): rebuilt\n";
  return false;
}

void export_extension(const fs::path& ext_root, const fs::path& shared, const std::string& key) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(shared / key, ec))) return;
  auto status = read_beneath(ext_root / key, "status", status_cap);
  if (!status || !status->starts_with("ok")) return;
  std::string why;
  (void)copy_entry(ext_root, shared, key, why);
}

}  // namespace lathe::gate
