// CPU slots (gate/cpu_slot.h): the split of the cores, the slot lock across processes, a link in
// place of a lock file, the pool. Nothing here times anything: every assertion is about who holds
// a lock, and a wait is observed as "not yet", never as a duration.
#include <gtest/gtest.h>

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <filesystem>
#include <string>

#include "gate/cpu_slot.h"

namespace lathe::gate {
namespace {

namespace fs = std::filesystem;

class cpu_slot_test : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/lathe-slot-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    setenv("LATHE_LOCK_DIR", (dir_ / "locks").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST(cpu_slots, split_into_disjoint_consecutive_sets) {
  auto s = split_cores({0, 1, 2, 5, 6}, 2);
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].cores, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_EQ((*s)[1].cores, (std::vector<uint32_t>{5, 6}));
  EXPECT_EQ((*s)[1].index, 1u);
  EXPECT_EQ((*s)[1].count, 2u);
  auto one = split_cores({3, 4}, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ((*one)[0].cores, (std::vector<uint32_t>{3, 4}));
  EXPECT_FALSE(split_cores({0, 1}, 3)) << "a slot without a core of its own";
  EXPECT_FALSE(split_cores({0, 1}, 0));
  EXPECT_FALSE(allowed_cores().empty());
}

// Reads one byte from `fd` within `ms` milliseconds; -1 when none came.
int read_byte(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) != 1) return -1;
  char c = 0;
  return read(fd, &c, 1) == 1 ? c : -1;
}

TEST_F(cpu_slot_test, a_second_process_waits_for_the_slot) {
  const cpu_slot s{0, 1, {0}};
  int go[2], p[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(p), 0);
  // The child is forked before the parent takes the lock: a child forked after would inherit the
  // locked descriptor, and an flock belongs to the open file, not the process.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(p[0]);
    close(go[1]);
    if (read_byte(go[0], 60000) != 'y') _exit(1);
    auto tried = slot_lock::try_acquire(s);
    const char busy = tried && !*tried ? 'b' : 'x';
    [[maybe_unused]] auto n = write(p[1], &busy, 1);
    auto got = slot_lock::acquire(s);  // blocks until the parent lets go
    const char done = got ? 'g' : 'e';
    n = write(p[1], &done, 1);
    _exit(0);
  }
  close(p[1]);
  close(go[0]);
  auto held = slot_lock::acquire(s);
  ASSERT_TRUE(held) << held.error().message;
  const char y = 'y';
  ASSERT_EQ(write(go[1], &y, 1), 1);
  EXPECT_EQ(read_byte(p[0], 30000), 'b') << "the second process took a slot that the first holds";
  // Still held: whatever the machine's load, the child cannot have it yet.
  EXPECT_EQ(read_byte(p[0], 300), -1) << "the second process did not wait";
  *held = slot_lock{};
  EXPECT_EQ(read_byte(p[0], 30000), 'g') << "the second process never got the slot once it was free";
  kill(child, SIGKILL);  // a no-op when it has ended; never left behind when it has not
  int st = 0;
  waitpid(child, &st, 0);
  close(p[0]);
  close(go[1]);
}

TEST_F(cpu_slot_test, slots_that_share_a_core_exclude_each_other) {
  auto whole = slot_lock::acquire(cpu_slot{0, 1, {0, 1}});
  ASSERT_TRUE(whole) << whole.error().message;
  auto half = slot_lock::try_acquire(cpu_slot{1, 2, {1}});
  ASSERT_TRUE(half) << half.error().message;
  EXPECT_FALSE(*half) << "a slot of core 1 taken while the whole machine's slot is held";
  auto other = slot_lock::try_acquire(cpu_slot{0, 1, {2}});
  ASSERT_TRUE(other);
  EXPECT_TRUE(*other) << "a disjoint slot must be free";
}

TEST_F(cpu_slot_test, a_link_in_place_of_the_lock_file_is_not_followed) {
  ASSERT_TRUE(slot_lock::acquire(cpu_slot{0, 1, {7}}));  // makes the folder
  const fs::path lock = slot_lock::core_file(3);
  const fs::path target = dir_ / "elsewhere";
  fs::create_symlink(target, lock);
  auto l = slot_lock::acquire(cpu_slot{0, 1, {3}});
  ASSERT_FALSE(l) << "a link planted as the lock file was used";
  EXPECT_NE(l.error().message.find("link"), std::string::npos) << l.error().message;
  EXPECT_FALSE(fs::exists(target)) << "lathe created the link's target";
  auto t = slot_lock::try_acquire(cpu_slot{0, 1, {3}});
  EXPECT_FALSE(t) << "try_acquire followed the link";
}

TEST_F(cpu_slot_test, the_pool_hands_out_free_slots_only) {
  auto slots = split_cores({0, 1}, 2);
  ASSERT_TRUE(slots);
  cpu_slot_pool pool(*slots);
  {
    auto a = pool.take();
    ASSERT_TRUE(a) << a.error().message;
    auto b = pool.take();
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_NE(a->slot().index, b->slot().index);
    EXPECT_EQ(a->slot().cores.size() + b->slot().cores.size(), 2u);
  }
  // Another lathe process holds slot 0: this one's next evaluation gets slot 1.
  auto other = slot_lock::acquire((*slots)[0]);
  ASSERT_TRUE(other);
  auto c = pool.take();
  ASSERT_TRUE(c);
  EXPECT_EQ(c->slot().index, 1u);
}

}  // namespace
}  // namespace lathe::gate
