// The build cache and the device lock, with the real compiler and real processes.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/hash.h"
#include "gate/build.h"
#include "spec/bundle.h"
#include "gate/device_lock.h"

namespace fs = std::filesystem;
using namespace lathe;
using namespace lathe::gate;

namespace {

class build_cache : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-build-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    auto tc = detect_toolchain(fs::path(LATHE_SOURCE_DIR) / "include");
    ASSERT_TRUE(tc) << tc.error().message;
    tc_ = *tc;
    std::ofstream(dir_ / "k.cpp") << "#include <lathe/abi.h>\nextern \"C\" int lathe_launch(const lathe_args*) { return 0; }\n";
    auto b = load_bundle(dir_ / "k.cpp");
    ASSERT_TRUE(b) << b.error().message;
    bundle_ = *b;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  toolchain tc_;
  kernel_bundle bundle_;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_F(build_cache, second_build_is_a_hit_and_keys_cover_isa_and_kind) {
  auto first = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(first && first->ok) << (first ? first->log : first.error().message);
  EXPECT_FALSE(first->cached);
  EXPECT_NE(first->log.find("-march=x86-64-v2"), std::string::npos);
  auto again = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(again && again->ok);
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->object, first->object);
  auto other_isa = build(bundle_, "x86-64", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(other_isa && other_isa->ok);
  EXPECT_NE(other_isa->key, first->key);
  auto ref = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::reference);
  ASSERT_TRUE(ref);
  EXPECT_NE(ref->key, first->key);
}

TEST_F(build_cache, an_object_written_over_is_rebuilt) {
  auto first = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(first && first->ok);
  const std::string original = slurp(first->object);
  std::ofstream(first->object, std::ios::binary | std::ios::app) << "tampered";
  auto again = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(again && again->ok);
  EXPECT_FALSE(again->cached);
  EXPECT_NE(again->log.find("does not match its recorded hash"), std::string::npos) << again->log;
  EXPECT_EQ(content_hash(slurp(again->object)), again->object_hash);
}

TEST_F(build_cache, compile_errors_are_cached_with_their_log) {
  bundle_.sources["k.cpp"] = "int broken(";
  bundle_.hash = bundle_hash(bundle_);
  auto first = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(first);
  EXPECT_FALSE(first->ok);
  EXPECT_NE(first->log.find("error"), std::string::npos);
  auto again = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->ok);
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->log, first->log);
}

TEST_F(build_cache, the_compiler_does_not_see_lathes_environment) {
  setenv("OPENAI_API_KEY", "sk-build-secret", 1);
  bundle_.sources["k.cpp"] =
      "#include <lathe/abi.h>\n#if __has_include(<stdlib.h>)\n#endif\n"
      "extern \"C\" int lathe_launch(const lathe_args*) { return 0; }\n";
  bundle_.manifest.flags = {"-O1", "-v"};  // the driver prints its environment-derived paths
  bundle_.hash = bundle_hash(bundle_);
  auto r = build(bundle_, "x86-64-v2", tc_, dir_ / "cache", build_kind::kernel);
  ASSERT_TRUE(r && r->ok) << (r ? r->log : "");
  EXPECT_EQ(slurp(r->object).find("sk-build-secret"), std::string::npos);
  EXPECT_EQ(r->log.find("sk-build-secret"), std::string::npos);
}

TEST(device_lock_test, exclusive_excludes_shared_across_processes) {
  char tmpl[] = "/tmp/lathe-lock-test-XXXXXX";
  const fs::path dir = mkdtemp(tmpl);
  setenv("LATHE_LOCK_DIR", (dir / "locks").c_str(), 1);
  auto held = device_lock::acquire("cpu", device_lock::mode::exclusive);
  ASSERT_TRUE(held) << held.error().message;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  if (pid == 0) {  // a second "lathe" that wants to build
    // A forked child shares the parent's lock (one open file description): drop every
    // inherited fd but the pipe, as exec would (the lock fd is close-on-exec).
    dup2(fds[1], 100);
    syscall(SYS_close_range, 3u, 99u, 0u);
    auto l = device_lock::acquire("cpu", device_lock::mode::shared);
    char c = l ? 'y' : 'n';
    (void)!write(100, &c, 1);
    _exit(0);
  }
  close(fds[1]);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The child must still be blocked: nothing written yet.
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  char c = 0;
  EXPECT_EQ(read(fds[0], &c, 1), -1);
  held = device_lock{};  // release
  fcntl(fds[0], F_SETFL, 0);
  ASSERT_EQ(read(fds[0], &c, 1), 1);
  EXPECT_EQ(c, 'y');
  waitpid(pid, nullptr, 0);
  // Two shared holders coexist.
  auto s1 = device_lock::acquire("cpu", device_lock::mode::shared);
  auto s2 = device_lock::acquire("cpu", device_lock::mode::shared);
  EXPECT_TRUE(s1 && s2);
  fs::remove_all(dir);
}
