// A fresh directory under the system temp directory, removed with everything in it at the end of
// the test (mkdtemp: unique even when ctest runs tests in parallel).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace lathe::testing {

class temp_dir {
 public:
  temp_dir() {
    std::string templ = (std::filesystem::temp_directory_path() / "lathe-store-XXXXXX").string();
    if (!mkdtemp(templ.data())) std::abort();
    path_ = std::filesystem::canonical(templ);
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace lathe::testing
