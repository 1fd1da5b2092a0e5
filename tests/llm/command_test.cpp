// The command provider (llm/command.h) with small shell scripts as the agent: prompt on stdin,
// reply on stdout, working-directory changes as edits that agent/edit.h applies, a clean
// environment, timeouts that also end what the agent left running, cancellation.
#include "llm/command.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "agent/edit.h"
#include "core/test_util.h"
#include "spec/bundle.h"
#include "llm/cassette.h"

namespace lathe::llm {
namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

kernel_bundle make_bundle() {
  kernel_bundle b;
  b.name = "k";
  b.manifest.entry = "kernel.cpp";
  b.manifest.files = {"kernel.cpp", "util.h"};
  b.manifest.flags = {"-O3"};
  b.sources["kernel.cpp"] = "void f(float* y, const float* x, int i) {\n  y[i] = 2.0f * x[i];\n}\n";
  b.sources["util.h"] = "#define TILE 4\n";
  b.hash = bundle_hash(b);
  return b;
}

request prompt() {
  request r;
  r.system = "You optimize kernels.";
  r.messages.push_back({"user", "Make f faster."});
  return r;
}

class command : public ::testing::Test {
 protected:
  // A shell script agent; `env` lists the variables it gets.
  command_provider agent(const std::string& body, std::vector<std::string> env = {"PATH"},
                         double timeout = 30) {
    const fs::path script = tmp_ / ("agent" + std::to_string(++scripts_) + ".sh");
    test::write_file(script, "#!/bin/sh\n" + body);
    chmod(script.c_str(), 0755);
    command_config c;
    c.name = "script";
    c.argv = {script.string()};
    c.env = std::move(env);
    c.timeout_seconds = timeout;
    return command_provider(c);
  }
  test::temp_dir tmp_;
  int scripts_ = 0;
};

TEST_F(command, reply_on_stdout_and_directory_changes_as_edits) {
  auto p = agent(
      "prompt=$(cat)\n"
      "printf 'prompt=[%s]\\n' \"$prompt\"\n"
      "echo 'speedup: 100x, verified on an H200'\n"
      "sed 's/2.0f \\* x\\[i\\]/x[i] + x[i]/' kernel.cpp > kernel.cpp.new\n"
      "mv kernel.cpp.new kernel.cpp\n"
      "printf '#define TILE 8\\n' > tile.h\n"
      "rm util.h\n"
      "mkdir .git && echo junk > .git/HEAD\n");
  EXPECT_EQ(p.name(), "command/script");
  const kernel_bundle b = make_bundle();
  auto r = p.call_in(prompt(), b);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(has(r->text, "prompt=[You optimize kernels.\n\nMake f faster.]\n")) << r->text;
  EXPECT_TRUE(r->text.starts_with("prompt=["));
  EXPECT_EQ(r->finish, finish_reason::stop);
  EXPECT_EQ(r->tokens_in, 0);  // nothing it says is taken as a measurement or an account

  auto edited = agent::apply_reply(b, r->text);
  ASSERT_TRUE(edited.has_value()) << edited.error().message << "\n" << r->text;
  EXPECT_EQ(edited->sources.at("kernel.cpp"),
            "void f(float* y, const float* x, int i) {\n  y[i] = x[i] + x[i];\n}\n");
  EXPECT_EQ(edited->sources.at("tile.h"), "#define TILE 8\n");
  EXPECT_FALSE(edited->sources.count("util.h"));
  EXPECT_FALSE(has(r->text, ".git"));
  EXPECT_EQ(edited->manifest.flags, b.manifest.flags);
}

TEST_F(command, environment_holds_only_the_listed_variables) {
  setenv("OPENAI_API_KEY", "sk-test-not-for-agents", 1);
  setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-for-agents", 1);
  const std::string body =
      "printf 'openai=[%s] anthropic=[%s] home=[%s] path=[%s]\\n' \"$OPENAI_API_KEY\" "
      "\"$ANTHROPIC_API_KEY\" \"$HOME\" \"$PATH\"\n";
  auto clean = agent(body).call(prompt());
  auto listed = agent(body, {"PATH", "OPENAI_API_KEY"}).call(prompt());
  unsetenv("OPENAI_API_KEY");
  unsetenv("ANTHROPIC_API_KEY");
  ASSERT_TRUE(clean.has_value()) << clean.error().message;
  ASSERT_TRUE(listed.has_value()) << listed.error().message;
  EXPECT_TRUE(has(clean->text, "openai=[] anthropic=[] home=[] path=[")) << clean->text;
  EXPECT_FALSE(has(clean->text, "path=[]"));  // PATH was listed: it is there
  EXPECT_TRUE(has(listed->text, "openai=[sk-test-not-for-agents] anthropic=[]")) << listed->text;
}

TEST_F(command, the_agent_inherits_no_descriptor_privilege_or_core_file) {
  // A descriptor lathe holds open without close-on-exec (as a store or a lock may be).
  const int leaked = open(tmp_.path().c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(leaked, 3);
  auto r = agent(
               "echo fds=$(ls /proc/self/fd | sort -n | tr '\\n' ' ')\n"
               "grep NoNewPrivs /proc/self/status\n"
               "echo core=$(ulimit -c)\n")
               .call(prompt());
  close(leaked);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  // 0, 1, 2 and the one `ls` opens to read the directory: nothing of lathe's.
  EXPECT_TRUE(has(r->text, "fds=0 1 2 3\n")) << r->text;
  EXPECT_TRUE(has(r->text, "NoNewPrivs:\t1")) << r->text;
  EXPECT_TRUE(has(r->text, "core=0")) << r->text;
}

TEST_F(command, links_binaries_and_replaced_files_follow_the_edit_rules) {
  auto p = agent(
      "ln -s /etc/passwd secrets.h\n"
      "printf 'ELF\\000\\001' > a.out\n"
      "rm util.h && ln -s /etc/hostname util.h\n"
      "echo done\n");
  const kernel_bundle b = make_bundle();
  auto r = p.call_in(prompt(), b);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(has(r->text,
                  "ignored in the working directory: a.out (binary), secrets.h "
                  "(symbolic link)"))
      << r->text;
  EXPECT_FALSE(has(r->text, "root:"));  // never read through a link
  auto edited = agent::apply_reply(b, r->text);
  ASSERT_FALSE(edited.has_value());
  EXPECT_EQ(edited.error().verdict, outcome::edit_not_applied);
  EXPECT_EQ(edited.error().path, "util.h");
  EXPECT_TRUE(has(edited.error().message, "symbolic link")) << edited.error().message;
}

TEST_F(command, a_new_file_of_the_wrong_kind_is_not_applied) {
  auto r =
      agent("echo log > build.log\necho 'int g;' >> kernel.cpp\n").call_in(prompt(), make_bundle());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto edited = agent::apply_reply(make_bundle(), r->text);
  ASSERT_FALSE(edited.has_value());
  EXPECT_EQ(edited.error().path, "build.log");
}

TEST_F(command, an_edited_manifest_is_refused_with_the_flags_hint) {
  auto r = agent("echo 'flags = [\"-O2\"]' > kernel.toml\n").call_in(prompt(), make_bundle());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto edited = agent::apply_reply(make_bundle(), r->text);
  ASSERT_FALSE(edited.has_value());
  EXPECT_EQ(edited.error().path, "kernel.toml");
  EXPECT_TRUE(has(edited.error().message, "FLAGS block")) << edited.error().message;
}

TEST_F(command, without_a_bundle_new_files_still_come_back) {
  auto r = agent("printf 'int main() {}\\n' > hello.cpp\necho made it\n").call(prompt());
  ASSERT_TRUE(r.has_value()) << r.error().message;
  auto edits = agent::parse_edits(r->text);
  ASSERT_TRUE(edits.has_value()) << edits.error().message;
  ASSERT_EQ(edits->files.size(), 1u);
  EXPECT_EQ(edits->files[0].path, "hello.cpp");
  EXPECT_EQ(edits->files[0].contents, "int main() {}\n");
}

TEST_F(command, timeout_ends_the_agent_and_what_it_started) {
  const auto start = clock_type::now();
  auto r = agent("sleep 30\n", {"PATH"}, 0.5).call(prompt());
  const double took = std::chrono::duration<double>(clock_type::now() - start).count();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, call_error::timeout);
  EXPECT_LT(took, 10.0);
  // A background child that keeps stdout open does not hold the call once the agent exited.
  const auto start2 = clock_type::now();
  auto bg = agent("sleep 30 &\necho quick\n").call(prompt());
  const double took2 = std::chrono::duration<double>(clock_type::now() - start2).count();
  ASSERT_TRUE(bg.has_value()) << bg.error().message;
  EXPECT_EQ(bg->text, "quick\n");
  EXPECT_LT(took2, 10.0);
}

TEST_F(command, cancellation) {
  cancel_token cancel;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.cancelled = true;
  });
  const auto start = clock_type::now();
  auto r = agent("sleep 30\n").call(prompt(), &cancel);
  t.join();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().kind, call_error::cancelled);
  EXPECT_LT(std::chrono::duration<double>(clock_type::now() - start).count(), 10.0);
}

TEST_F(command, failures_say_why) {
  auto failed = agent("echo 'model overloaded' >&2\nexit 3\n").call(prompt());
  ASSERT_FALSE(failed.has_value());
  EXPECT_EQ(failed.error().kind, call_error::server);
  EXPECT_TRUE(has(failed.error().message, "status 3")) << failed.error().message;
  EXPECT_TRUE(has(failed.error().message, "model overloaded"));

  command_config missing;
  missing.name = "nope";
  missing.argv = {"lathe-no-such-agent-cli"};
  auto m = command_provider(missing).call(prompt());
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().kind, call_error::bad_request);
  EXPECT_TRUE(has(m.error().message, "not found in PATH"));
}

TEST_F(command, an_agent_that_ignores_its_stdin_does_not_hurt_lathe) {
  request big = prompt();
  big.messages[0].content.assign(4u << 20, 'k');  // far more than a pipe buffer
  auto r = agent("echo hi\n").call(big);          // exits without reading: EPIPE, never SIGPIPE
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->text, "hi\n");
}

TEST_F(command, recorded_agent_runs_replay_to_the_same_kernel) {
  const kernel_bundle b = make_bundle();
  request q = prompt();
  q.template_id = "materialize";
  q.template_version = 1;
  q.fields_hash = "00112233445566778899aabbccddeeff";
  const fs::path script = tmp_ / "rec.sh";
  test::write_file(script, "#!/bin/sh\ncat > /dev/null\necho '// tuned' >> kernel.cpp\necho ok\n");
  chmod(script.c_str(), 0755);
  command_config c;
  c.name = "rec";
  c.argv = {script.string()};
  c.env = {"PATH"};
  record_provider rec(std::make_unique<command_provider>(c), tmp_ / "cassettes");
  auto live = rec.call_in(q, b);
  ASSERT_TRUE(live.has_value()) << live.error().message;
  replay_provider rep(tmp_ / "cassettes");
  auto again = rep.call_in(q, b);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->text, live->text);
  auto k1 = agent::apply_reply(b, live->text);
  auto k2 = agent::apply_reply(b, again->text);
  ASSERT_TRUE(k1.has_value() && k2.has_value());
  EXPECT_EQ(k1->hash, k2->hash);
  EXPECT_TRUE(has(k1->sources.at("kernel.cpp"), "// tuned"));
}

TEST(command_text, utf8_check) {
  EXPECT_TRUE(is_utf8_text("plain ascii\n"));
  EXPECT_TRUE(is_utf8_text("Résumé → 🙂"));
  EXPECT_FALSE(is_utf8_text(std::string("a\0b", 3)));
  EXPECT_FALSE(is_utf8_text("\xff"));
  EXPECT_FALSE(is_utf8_text("\xc0\xaf"));      // overlong '/'
  EXPECT_FALSE(is_utf8_text("\xed\xa0\x80"));  // a surrogate
  EXPECT_FALSE(is_utf8_text("\xe2\x82"));      // truncated
}

}  // namespace
}  // namespace lathe::llm
