#include "store/workspace.h"

#include <system_error>

namespace lathe {

namespace fs = std::filesystem;

namespace {

constexpr const char* dir_name = ".lathe";

// Creates `dir` with mode 0700 when it is missing. An existing directory keeps its mode: the
// user may have opened it up on purpose (a shared workspace), and we only promise how we create.
result<void> make_private_dir(const fs::path& dir) {
  std::error_code ec;
  auto st = fs::status(dir, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st)) return {};
    return fail(errc::invalid_argument,
                dir.string() +
                    " exists but is not a directory; lathe needs a directory there "
                    "(move the file, or choose another place with --workspace DIR)");
  }
  if (!fs::create_directory(dir, ec) && ec)
    return fail(errc::io_error, dir.string() + ": cannot create the directory: " + ec.message());
  // create_directory honours the umask, which can only remove bits; set the mode explicitly so
  // a permissive umask cannot leave the store readable by the sandbox user.
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  if (ec)
    return fail(errc::io_error,
                dir.string() + ": cannot make the directory private (0700): " + ec.message());
  return {};
}

result<workspace> finish(const fs::path& root) {
  for (const fs::path& d : {root, root / "cache", root / "runs"})
    if (auto r = make_private_dir(d); !r) return tl::unexpected(r.error());
  std::error_code ec;
  fs::path canonical = fs::canonical(root, ec);
  return workspace{ec ? root : canonical};
}

result<workspace> open_explicit(const fs::path& dir) {
  std::error_code ec;
  fs::path abs = fs::absolute(dir, ec);
  if (ec) return fail(errc::invalid_argument, dir.string() + ": " + ec.message());
  // "DIR/.lathe" names the workspace itself; anything else is the directory that holds it.
  fs::path root = abs.filename() == dir_name ? abs : abs / dir_name;
  fs::path parent = root.parent_path();
  auto st = fs::status(parent, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    return fail(errc::invalid_argument,
                "--workspace " + dir.string() + ": " + parent.string() +
                    " is a file, not a directory; give the directory that should hold .lathe/");
  if (!fs::exists(st)) {
    fs::create_directories(parent, ec);
    if (ec)
      return fail(errc::io_error, "--workspace " + dir.string() + ": cannot create " +
                                      parent.string() + ": " + ec.message());
  }
  return finish(root);
}

}  // namespace

result<workspace> open_workspace(const std::optional<fs::path>& explicit_dir,
                                 const fs::path& start) {
  if (explicit_dir) return open_explicit(*explicit_dir);

  std::error_code ec;
  fs::path here = fs::absolute(start, ec);
  if (ec) return fail(errc::invalid_argument, start.string() + ": " + ec.message());
  here = here.lexically_normal();
  if (!here.has_filename()) here = here.parent_path();  // "/a/b/" -> "/a/b"
  // Upward like git: the nearest .lathe/ wins, so nested projects keep their own. A .lathe that
  // is not a directory is skipped here and reported only if we would create ours in its place.
  for (fs::path p = here;; p = p.parent_path()) {
    if (fs::is_directory(p / dir_name, ec)) return finish(p / dir_name);
    if (p == p.parent_path()) break;
  }
  return finish(here / dir_name);
}

}  // namespace lathe
