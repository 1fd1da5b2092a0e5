// Headless Chromium for the report tests: a page rendered (its DOM after the inline script ran,
// the browser's log, optionally a screenshot) and what its script reported. Chromium is a test
// dependency (scripts/install-deps installs Debian's `chromium`); without it the tests fail and
// say so, they do not skip.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace lathe::testing {

namespace fs = std::filesystem;

// chromium (Debian) or chromium-browser (Ubuntu's name), from PATH; empty when neither is there.
inline std::string find_chromium() {
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser"}) {
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      const fs::path cand = fs::path(p.substr(start, end - start)) / name;
      if (access(cand.c_str(), X_OK) == 0) return cand.string();
      start = end + 1;
    }
  }
  return {};
}

struct rendered {
  int code = -1;
  std::string dom;  // the DOM after the page's scripts ran (--dump-dom)
  std::string log;  // the browser's stderr (console messages with --enable-logging=stderr)
};

inline std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Renders `html` in headless Chromium with no network use: the DOM, the log and, when
// `screenshot` is given, a PNG of the page's first 1400 x 2400 pixels.
inline rendered render_page(const fs::path& html, const fs::path& screenshot = {}) {
  rendered r;
  const std::string chromium = find_chromium();
  if (chromium.empty()) {
    ADD_FAILURE() << "chromium is not installed: the report tests render pages in headless Chromium. "
                     "Install Debian's `chromium` package (scripts/install-deps does; apt-get install chromium).";
    return r;
  }
  const fs::path profile = html.parent_path() / (html.stem().string() + ".chromium-profile");
  const fs::path out = html.parent_path() / (html.stem().string() + ".dom");
  const fs::path log = html.parent_path() / (html.stem().string() + ".log");
  std::string cmd = "'" + chromium + "' --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions "
                    "--disable-background-networking --disable-sync --disable-component-update "
                    "--user-data-dir='" + profile.string() + "' --enable-logging=stderr --v=0 ";
  if (!screenshot.empty()) cmd += "--hide-scrollbars --window-size=1400,2400 --screenshot='" + screenshot.string() + "' ";
  cmd += "--dump-dom 'file://" + fs::absolute(html).string() + "' >'" + out.string() + "' 2>'" + log.string() + "'";
  const int st = std::system(cmd.c_str());
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.dom = read_text(out);
  r.log = read_text(log);
  std::error_code ec;
  fs::remove_all(profile, ec);
  return r;
}

// What went wrong in the page's scripts, empty when nothing: the report's own error box
// (window.onerror and every section's guard write there) and uncaught errors in the log.
inline std::string page_errors(const rendered& r) {
  std::string out;
  std::smatch m;
  if (std::regex_search(r.dom, m, std::regex("id=\"lathe-errors\" data-count=\"([0-9]+)\"")) && m[1] != "0") {
    const size_t at = r.dom.find("id=\"lathe-errors\"");
    out += "error box: " + r.dom.substr(at, 800) + "\n";
  }
  for (size_t at = r.log.find("Uncaught"); at != std::string::npos; at = r.log.find("Uncaught", at + 1))
    out += "console: " + r.log.substr(at, r.log.find('\n', at) - at) + "\n";
  if (r.dom.find("data-rendered=\"lathe\"") == std::string::npos) out += "the report's script did not finish\n";
  return out;
}

// How often `needle` occurs in `hay`.
inline size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

// The markup from the element whose start tag contains `marker` up to the next `end` (for an
// <svg> or <table> that holds no other element of its kind).
inline std::string element(const std::string& dom, const std::string& marker, const std::string& end) {
  const size_t at = dom.find(marker);
  if (at == std::string::npos) return {};
  const size_t start = dom.rfind('<', at);
  const size_t stop = dom.find(end, at);
  return dom.substr(start, stop == std::string::npos ? std::string::npos : stop + end.size() - start);
}

inline size_t count_regex(const std::string& hay, const std::string& re) {
  const std::regex r(re);
  return static_cast<size_t>(std::distance(std::sregex_iterator(hay.begin(), hay.end(), r), std::sregex_iterator()));
}

}  // namespace lathe::testing
