// lathe's judge of a Python worker's op record (gate/cpu/op_record.h): the framing the observer
// writes (python/lathe_ops.py), the policies, and what a candidate writing to the pipe gets.
#include "gate/cpu/op_record.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace lathe::gate {
namespace {

op_policy policy(torch_compute mode, std::set<std::string, std::less<>> refused = {}) {
  op_policy p;
  p.mode = mode;
  p.refused = std::move(refused);
  p.plumbing = parse_plumbing("empty view copy_  # a comment: mm\n_to_copy\tcat\n");
  return p;
}

std::string rec(const std::string& name) { return "\x1e" + name + "\n"; }

TEST(op_record, the_plumbing_list_is_words_without_comments) {
  const auto p = parse_plumbing("# header mm\nempty view # add\n  cat\n");
  EXPECT_EQ(p, (std::set<std::string, std::less<>>{"empty", "view", "cat"}));
}

TEST(op_record, the_shipped_list_is_the_one_the_python_side_reads_and_holds_no_compute) {
  auto p = read_plumbing(std::filesystem::path(LATHE_SOURCE_DIR) / "python/lathe_plumbing.txt");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_TRUE(p->count("view") && p->count("copy_") && p->count("empty"));
  for (const char* compute : {"mm", "addmm", "add", "mul", "relu", "sum", "bmm", "convolution", "softmax"})
    EXPECT_FALSE(p->count(compute)) << compute;
}

TEST(op_record, forbid_refuses_the_first_compute_op_even_across_reads) {
  op_record r(policy(torch_compute::forbid));
  r.feed(rec("empty") + rec("view") + "\x1em", true);
  EXPECT_TRUE(r.violation().empty());
  r.feed("m\n" + rec("add"), true);  // split where a pipe read may split it
  EXPECT_NE(r.violation().find("aten::mm ran"), std::string::npos) << r.violation();
  EXPECT_EQ(r.ops(), 3u);
}

TEST(op_record, forbid_judges_loads_and_fallback_does_not) {
  op_record f(policy(torch_compute::forbid));
  EXPECT_TRUE(f.judges_loads());
  op_record b(policy(torch_compute::fallback, {"mm"}));
  EXPECT_FALSE(b.judges_loads());
  b.feed(rec("mm"), false);  // a Model constructor's own ops, while loading
  EXPECT_TRUE(b.violation().empty());
  b.feed(rec("add"), true);  // compute the reference does not run
  EXPECT_TRUE(b.violation().empty());
  b.feed(rec("mm"), true);
  EXPECT_NE(b.violation().find("torch fallback: aten::mm ran"), std::string::npos) << b.violation();
}

TEST(op_record, anything_but_a_record_is_tampering_and_the_first_reason_stays) {
  for (const std::string& forged : {std::string("xyz") + rec("mm"),      // a prefix glued to a name
                                    "\x1emm\x1e" + rec("view"),          // a record cut short
                                    "\x1e" + std::string(300, 'a') + "\n"}) {  // a name over the cap
    op_record r(policy(torch_compute::fallback, {"mm"}));
    r.feed(forged, true);
    EXPECT_NE(r.violation().find("wrote to lathe's record"), std::string::npos) << forged;
    r.feed(rec("mm"), true);
    EXPECT_NE(r.violation().find("wrote to lathe's record"), std::string::npos);
  }
}

TEST(op_record, a_forged_well_formed_record_only_adds_an_op) {
  op_record r(policy(torch_compute::forbid));
  r.feed(rec("view") + rec("::custom::op"), true);
  EXPECT_NE(r.violation().find("aten::::custom::op"), std::string::npos) << r.violation();
}

}  // namespace
}  // namespace lathe::gate
