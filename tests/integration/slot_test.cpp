// A paired series on one CPU slot (issue 46 item 1; verify/slot_verifier.h): the candidate, the
// baseline and the A/A control's copies all run pinned to the slot the evaluation took, and the
// slot's lock is held until the evaluation is stored. The kernel (slot/axpy_on_slot.cpp) fails
// on any other cores, so a worker started off the slot turns the verdict into a failure. The
// verdict asserted is "not the kernel's failure" (ok, or unstable on a loaded machine), never a
// time.
#include <gtest/gtest.h>
#include <fstream>
#include <string>

#include "gate/cpu_slot.h"
#include "gate_fixture.h"
#include "verify/slot_verifier.h"

namespace lathe::testing {
namespace {

class slot_test : public gate_env {};

TEST_F(slot_test, a_paired_series_runs_on_one_slot_under_its_lock) {
  const auto cores = gate::allowed_cores();
  auto slots = gate::split_cores(cores, static_cast<uint32_t>(cores.size() > 1 ? 2 : 1));
  ASSERT_TRUE(slots) << slots.error().message;
  const gate::cpu_slot last = slots->back();  // not the first cores: a default would be caught
  std::string want;
  for (uint32_t c : last.cores) want += (want.empty() ? "" : ",") + std::to_string(c);
  const std::filesystem::path file = dir_ / "axpy_on_slot.cpp";
  {
    std::ifstream in(source_dir() / "tests/integration/slot/axpy_on_slot.cpp");
    std::ofstream out(file);
    out << "#define SLOT_CORES \"" << want << "\"\n" << in.rdbuf();
  }

  gate::cpu_slot_pool pool({last});
  const task t = load(source_dir() / "tests/integration/tasks/axpy");
  const kernel_bundle k = kernel(file);
  lineages::gate_hooks hooks;
  hooks.config = [this](const task&, bool time) {
    gate::gate_config c = cfg_;
    c.time = time;
    return c;
  };
  bool held_when_stored = false;
  hooks.record = [&](const kernel_bundle&, evaluation&) -> result<int64_t> {
    auto other = gate::slot_lock::try_acquire(last);
    held_when_stored = other && !*other;
    return 1;
  };
  lineages::slot_verifier v(hooks, pool);
  const evaluation e = v.compare(t, k, k, {"human", "test", false});
  EXPECT_TRUE(e.result == outcome::ok || e.result == outcome::unstable)
      << to_string(e.result) << ": " << e.message << "\n" << e.diagnostics;
  ASSERT_TRUE(e.paired) << "no paired series";
  EXPECT_FALSE(e.paired->a_seconds.empty());
  ASSERT_TRUE(e.aa) << "no A/A control";
  EXPECT_FALSE(e.aa->a_seconds.empty());
  ASSERT_TRUE(e.slot) << "the evaluation does not name its slot";
  EXPECT_EQ(e.slot->cores, last.cores);
  EXPECT_EQ(e.slot->index, last.index);
  EXPECT_TRUE(held_when_stored) << "the slot's lock was let go before the evaluation was stored";
  auto free_after = gate::slot_lock::try_acquire(last);
  ASSERT_TRUE(free_after);
  EXPECT_TRUE(*free_after) << "the slot stayed locked after the evaluation";

  // The same kernel off its slot (the whole machine, unpinned) fails: the check above has teeth.
  if (cores.size() > 1) {
    gate::gate_config whole = cfg_;
    whole.time = false;
    gate::gate_request req;
    req.t = &t;
    req.candidate = k;
    req.baseline = k;
    req.prov = {"human", "test", false};
    const evaluation off = gate::evaluate(whole, req);
    EXPECT_NE(off.result, outcome::ok) << "the kernel passed off its slot";
    EXPECT_FALSE(off.slot);
  }
}

}  // namespace
}  // namespace lathe::testing
