// Kernel bundles: defaults, manifest errors, identity by content (not by location), writing.
#include "spec/bundle.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace lathe {
namespace {

namespace fs = std::filesystem;

class bundle : public ::testing::Test {
 protected:
  fs::path dir(const std::string& rel) { return tmp_.path() / rel; }
  std::string load_error(const fs::path& p) {
    auto b = load_bundle(p);
    EXPECT_FALSE(b.has_value());
    return b ? std::string() : b.error().message;
  }
  test::temp_dir tmp_;
};

TEST_F(bundle, bare_file_is_a_one_file_bundle_with_defaults) {
  test::write_file(dir("k.cpp"), "int x;\n");
  test::write_file(dir("g.cu"), "__global__ void g() {}\n");
  auto b = load_bundle(dir("k.cpp"));
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_TRUE(b->bare);
  EXPECT_EQ(b->name, "k");
  EXPECT_EQ(b->manifest.lang, language::cpp);
  EXPECT_EQ(b->manifest.entry, "k.cpp");
  EXPECT_EQ(b->manifest.files, std::vector<std::string>{"k.cpp"});
  EXPECT_EQ(b->manifest.flags, std::vector<std::string>{"-O3"});
  EXPECT_EQ(b->sources.at("k.cpp"), "int x;\n");
  EXPECT_EQ(b->hash.size(), 32u);
  EXPECT_EQ(b->hash, bundle_hash(*b));
  auto g = load_bundle(dir("g.cu"));
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->manifest.lang, language::cuda);
  test::write_file(dir("notes.txt"), "x");
  EXPECT_NE(load_error(dir("notes.txt")).find("not a kernel bundle"), std::string::npos);
  EXPECT_NE(load_error(dir("missing")).find("no such kernel bundle"), std::string::npos);
}

TEST_F(bundle, directory_defaults) {
  test::write_file(dir("b/kernel.toml"), "");
  test::write_file(dir("b/kernel.cpp"), "#include \"inc/tile.h\"\n");
  test::write_file(dir("b/inc/tile.h"), "#define TILE 4\n");
  test::write_file(dir("b/.kernel.cpp.swp"), "editor junk");
  test::write_file(dir("b/.git/HEAD"), "ref");
  auto b = load_bundle(dir("b/"));  // a trailing slash names the same bundle
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_FALSE(b->bare);
  EXPECT_EQ(b->name, "b");
  EXPECT_EQ(b->manifest.entry, "kernel.cpp");
  EXPECT_EQ(b->manifest.files, (std::vector<std::string>{"inc/tile.h", "kernel.cpp"}));
  EXPECT_EQ(b->manifest.flags, std::vector<std::string>{"-O3"});
  EXPECT_EQ(b->sources.size(), 2u);
  // kernel.toml itself names its bundle.
  auto c = load_bundle(dir("b/kernel.toml"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->hash, b->hash);
}

TEST_F(bundle, explicit_manifest) {
  test::write_file(dir("b/kernel.toml"), R"(language  = "cuda"
entry     = "main.cu"
files     = ["main.cu", "./util.cuh"]
flags     = ["-O2", "-lineinfo"]
libraries = ["cublas"]
isa       = "sm_90a"
[defines]
TILE = "64"
STAGES = 3
)");
  test::write_file(dir("b/main.cu"), "x");
  test::write_file(dir("b/util.cuh"), "y");
  test::write_file(dir("b/unused.cu"), "z");
  auto b = load_bundle(dir("b"));
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->manifest.lang, language::cuda);
  EXPECT_EQ(b->manifest.files, (std::vector<std::string>{"main.cu", "util.cuh"}));
  EXPECT_EQ(b->manifest.flags, (std::vector<std::string>{"-O2", "-lineinfo"}));
  EXPECT_EQ(b->manifest.libraries, std::vector<std::string>{"cublas"});
  EXPECT_EQ(b->manifest.isa, "sm_90a");
  EXPECT_EQ(b->manifest.defines.at("TILE"), "64");
  EXPECT_EQ(b->manifest.defines.at("STAGES"), "3");
  EXPECT_FALSE(b->sources.count("unused.cu"));
}

TEST_F(bundle, manifest_errors_name_file_line_and_field) {
  const fs::path m = dir("b/kernel.toml");
  test::write_file(dir("b/a.cpp"), "a");
  test::write_file(dir("b/b.cpp"), "b");
  test::write_file(dir("outside.h"), "secret");
  auto expect = [&](const std::string& toml, int line, const std::string& what) {
    test::write_file(m, toml);
    const std::string msg = load_error(dir("b"));
    EXPECT_EQ(msg.rfind(m.string() + ":" + std::to_string(line) + ": ", 0), 0u) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  };
  expect("", 1, "'entry' is required: the bundle has 2 source files (a.cpp, b.cpp)");
  expect("entry = \"a.cpp\"\nfiles = [\"a.cpp\", \"../outside.h\"]\n", 2,
         "files: '../outside.h' escapes the bundle directory");
  expect("entry = \"a.cpp\"\nfiles = [\"a.cpp\", \"/etc/passwd\"]\n", 2,
         "escapes the bundle directory");
  expect("entry = \"a.cpp\"\nfiles = [\"a.cpp\", \"c.cpp\"]\n", 2, "files: 'c.cpp' is missing");
  expect("entry = \"c.cpp\"\n", 1, "entry 'c.cpp' is not one of the bundle's files");
  expect("entry = \"a.cpp\"\nlanguage = \"rust\"\n", 2, "unknown language 'rust'");
  expect("entry = \"a.cpp\"\nflag = [\"-O2\"]\n", 2, "unknown key 'flag'");
  expect("entry = \"a.cpp\"\nflags = \"-O2\"\n", 2, "'flags' must be an array of strings");
  expect("entry = \"a.cpp\"\nlibraries = [\"-lfoo\"]\n", 2,
         "libraries: '-lfoo' is not a library name");
  expect("entry = \"a.cpp\"\n[defines]\n\"A B\" = \"1\"\n", 3,
         "defines: 'A B' is not a macro name");
  expect("entry = = 1\n", 1, "TOML syntax");
}

TEST_F(bundle, links_leading_outside_are_refused) {
  test::write_file(dir("outside.h"), "secret");
  test::write_file(dir("b/k.cpp"), "k");
  fs::create_symlink(dir("outside.h"), dir("b/leak.h"));
  EXPECT_NE(load_error(dir("b")).find("outside the bundle"), std::string::npos);
  test::write_file(dir("b/kernel.toml"), "files = [\"k.cpp\", \"leak.h\"]\n");
  EXPECT_NE(load_error(dir("b")).find("outside the bundle"), std::string::npos);
}

TEST_F(bundle, hash_is_stable_sensitive_and_location_free) {
  test::write_file(dir("one/b/kernel.toml"),
                   "flags = [\"-O3\", \"-fopenmp\"]\n[defines]\nT = \"8\"\n");
  test::write_file(dir("one/b/k.cpp"), "int k() { return 1; }\n");
  test::write_file(dir("one/b/t.h"), "#pragma once\n");
  auto a = load_bundle(dir("one/b"));
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_EQ(load_bundle(dir("one/b"))->hash, a->hash);  // stable

  // Moved to another directory (another name, too): same kernel.
  fs::create_directories(dir("two"));
  fs::rename(dir("one/b"), dir("two/renamed"));
  auto moved = load_bundle(dir("two/renamed"));
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(moved->hash, a->hash);
  EXPECT_NE(moved->origin, a->origin);

  // One byte of one file.
  test::write_file(dir("two/renamed/t.h"), "#pragma once.\n");
  EXPECT_NE(load_bundle(dir("two/renamed"))->hash, a->hash);
  test::write_file(dir("two/renamed/t.h"), "#pragma once\n");
  EXPECT_EQ(load_bundle(dir("two/renamed"))->hash, a->hash);

  // One flag, one define, the language, a file's name: all part of identity.
  kernel_bundle b = *a;
  b.manifest.flags[1] = "-fopenmp-simd";
  EXPECT_NE(bundle_hash(b), a->hash);
  b = *a;
  b.manifest.defines["T"] = "16";
  EXPECT_NE(bundle_hash(b), a->hash);
  b = *a;
  b.manifest.lang = language::cuda;
  EXPECT_NE(bundle_hash(b), a->hash);
  b = *a;
  b.sources["u.h"] = b.sources["t.h"];
  b.sources.erase("t.h");
  EXPECT_NE(bundle_hash(b), a->hash);
  // Name, origin and `bare` are not.
  b = *a;
  b.name = "x";
  b.origin = "/elsewhere";
  b.bare = true;
  EXPECT_EQ(bundle_hash(b), a->hash);

  // A bare file and a directory holding only it, with defaults, are one kernel.
  test::write_file(dir("bare/k.cpp"), "int k() { return 1; }\n");
  test::write_file(dir("plain/k.cpp"), "int k() { return 1; }\n");
  EXPECT_EQ(load_bundle(dir("bare/k.cpp"))->hash, load_bundle(dir("plain"))->hash);
}

TEST_F(bundle, write_then_load_gives_the_same_kernel) {
  test::write_file(dir("src/kernel.toml"),
                   "entry = \"k.cpp\"\nflags = []\nlibraries = [\"m\"]\nisa = \"x86-64-v3\"\n"
                   "[defines]\nTILE = \"32\"\nNAME = \"a \\\"quoted\\\" value\"\n");
  test::write_file(dir("src/k.cpp"), "int k();\n");
  test::write_file(dir("src/sub/h.h"), std::string("bin\0ary", 7));
  auto a = load_bundle(dir("src"));
  ASSERT_TRUE(a.has_value()) << a.error().message;
  EXPECT_TRUE(a->manifest.flags.empty());  // explicit [] is kept, not replaced by the default
  ASSERT_TRUE(write_bundle(*a, dir("out")).has_value());
  EXPECT_TRUE(fs::exists(dir("out/kernel.toml")));
  auto b = load_bundle(dir("out"));
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(b->hash, a->hash);
  EXPECT_EQ(b->sources, a->sources);
  EXPECT_EQ(b->manifest.defines, a->manifest.defines);
  EXPECT_EQ(b->manifest.libraries, a->manifest.libraries);

  // A bare bundle is written with an explicit kernel.toml.
  test::write_file(dir("bare.cu"), "__global__ void g() {}\n");
  auto c = load_bundle(dir("bare.cu"));
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(write_bundle(*c, dir("out2")).has_value());
  auto d = load_bundle(dir("out2"));
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_FALSE(d->bare);
  EXPECT_EQ(d->manifest.lang, language::cuda);
  EXPECT_EQ(d->hash, c->hash);

  // A source path that escapes is refused, not written.
  kernel_bundle evil = *c;
  evil.sources["../escape.cu"] = "x";
  EXPECT_FALSE(write_bundle(evil, dir("out3")).has_value());
  EXPECT_FALSE(fs::exists(dir("escape.cu")));
}

}  // namespace
}  // namespace lathe
