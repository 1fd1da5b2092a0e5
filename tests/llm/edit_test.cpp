// Edits (agent/edit.h): exact application, failures that name the file and block for the model,
// containment, size caps, flags, and bundles that still load after an edit.
#include "agent/edit.h"

#include <gtest/gtest.h>

#include "core/test_util.h"
#include "spec/bundle.h"

namespace lathe::agent {
namespace {

const std::string kernel_src =
    "#include \"lathe/abi.h\"\n"
    "static void scale(float* y, const float* x, int n) {\n"
    "  for (int i = 0; i < n; ++i) {\n"
    "    y[i] = 2.0f * x[i];\n"
    "  }\n"
    "}\n"
    "static void shift(float* y, const float* x, int n) {\n"
    "  for (int i = 0; i < n; ++i) {\n"
    "    y[i] = x[i] + 1.0f;\n"
    "  }\n"
    "}\n";

kernel_bundle make_bundle() {
  kernel_bundle b;
  b.name = "k";
  b.origin = "/somewhere/k";
  b.manifest.entry = "kernel.cpp";
  b.manifest.files = {"kernel.cpp", "util.h"};
  b.manifest.flags = {"-O3"};
  b.sources["kernel.cpp"] = kernel_src;
  b.sources["util.h"] = "#pragma once\n#define TILE 4";  // no final newline
  b.hash = bundle_hash(b);
  return b;
}

std::string block(const std::string& path, const std::string& search, const std::string& replace) {
  return "@@@ FILE " + path + "\n<<<<<<< SEARCH\n" + search + "=======\n" + replace +
         ">>>>>>> REPLACE\n@@@ END\n";
}

edit_error apply_error(const std::string& reply, const kernel_bundle& b = make_bundle()) {
  auto r = apply_reply(b, reply);
  EXPECT_FALSE(r.has_value()) << "applied, but should not have:\n" << reply;
  return r ? edit_error{} : r.error();
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(edit, search_replace_applies_exactly_and_rehashes) {
  const auto b = make_bundle();
  const std::string reply =
      "I vectorize the scale loop.\n\n" +
      block("kernel.cpp", "    y[i] = 2.0f * x[i];\n", "    y[i] = x[i] + x[i];  // 2x\n") +
      "That's it.\n";
  auto r = apply_reply(b, reply);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  std::string want = kernel_src;
  want.replace(want.find("    y[i] = 2.0f * x[i];\n"), 24, "    y[i] = x[i] + x[i];  // 2x\n");
  EXPECT_EQ(r->sources.at("kernel.cpp"), want);
  EXPECT_EQ(r->sources.at("util.h"), b.sources.at("util.h"));
  EXPECT_NE(r->hash, b.hash);
  EXPECT_EQ(r->hash, bundle_hash(*r));
  EXPECT_TRUE(r->origin.empty());
  EXPECT_EQ(r->manifest.files, (std::vector<std::string>{"kernel.cpp", "util.h"}));
}

TEST(edit, search_matching_twice_fails_naming_file_block_and_lines) {
  // "  for (int i = 0; i < n; ++i) {\n" is in both functions.
  const auto e = apply_error(block("kernel.cpp", "  for (int i = 0; i < n; ++i) {\n",
                                   "  for (int i = n - 1; i >= 0; --i) {\n"));
  EXPECT_EQ(e.verdict, outcome::edit_not_applied);
  EXPECT_EQ(e.path, "kernel.cpp");
  EXPECT_EQ(e.block, 1);
  EXPECT_TRUE(has(e.message, "occurs 2 times")) << e.message;
  EXPECT_TRUE(has(e.message, "lines 3, 8")) << e.message;
  EXPECT_TRUE(has(e.message, "kernel.cpp, SEARCH/REPLACE block 1 of 1")) << e.message;
  // With one more line of context it is unique and applies.
  EXPECT_TRUE(
      apply_reply(make_bundle(),
                  block("kernel.cpp", "  for (int i = 0; i < n; ++i) {\n    y[i] = x[i] + 1.0f;\n",
                        "  for (int i = 0; i < n; ++i) {\n    y[i] = 1.0f + x[i];\n"))
          .has_value());
}

TEST(edit, search_not_found_shows_nearest_lines_and_first_difference) {
  // Block 2's indentation is wrong (2 spaces instead of 4): not applied, never fuzzed.
  const std::string reply =
      "@@@ FILE kernel.cpp\n"
      "<<<<<<< SEARCH\n#include \"lathe/abi.h\"\n=======\n#include \"lathe/abi.h\"\n#include "
      "<cmath>\n"
      ">>>>>>> REPLACE\n"
      "<<<<<<< SEARCH\n  for (int i = 0; i < n; ++i) {\n  y[i] = x[i] + 1.0f;\n=======\nX\n"
      ">>>>>>> REPLACE\n"
      "@@@ END\n";
  const auto e = apply_error(reply);
  EXPECT_EQ(e.path, "kernel.cpp");
  EXPECT_EQ(e.block, 2);
  EXPECT_TRUE(has(e.message, "block 2 of 2")) << e.message;
  EXPECT_TRUE(has(e.message, "does not occur")) << e.message;
  // Block 1 added a line: the nearest lines are numbered as block 1 left the file.
  EXPECT_TRUE(has(e.message, "10 |     y[i] = x[i] + 1.0f;")) << e.message;
  EXPECT_TRUE(has(e.message, "SEARCH line 2")) << e.message;
  EXPECT_TRUE(has(e.message, "only in whitespace")) << e.message;
  EXPECT_TRUE(has(e.message, "blocks apply in order")) << e.message;
}

TEST(edit, blocks_apply_in_order_each_to_the_previous_result) {
  const std::string reply =
      "@@@ FILE kernel.cpp\n"
      "<<<<<<< SEARCH\n    y[i] = 2.0f * x[i];\n=======\n    y[i] = 3.0f * x[i];\n>>>>>>> REPLACE\n"
      "<<<<<<< SEARCH\n    y[i] = 3.0f * x[i];\n=======\n    y[i] = 4.0f * x[i];\n>>>>>>> REPLACE\n"
      "@@@ END\n";
  auto r = apply_reply(make_bundle(), reply);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(has(r->sources.at("kernel.cpp"), "4.0f * x[i]"));
  EXPECT_FALSE(has(r->sources.at("kernel.cpp"), "2.0f * x[i]"));
}

TEST(edit, search_must_start_at_a_line_start) {
  // "= 2.0f * x[i];\n" occurs inside a line only: SEARCH holds whole lines.
  const auto e = apply_error(block("kernel.cpp", "= 2.0f * x[i];\n", "= 3.0f * x[i];\n"));
  EXPECT_TRUE(has(e.message, "does not occur")) << e.message;
}

TEST(edit, file_without_final_newline_matches_its_last_line_and_keeps_lacking_it) {
  auto r = apply_reply(make_bundle(), block("util.h", "#define TILE 4\n", "#define TILE 8\n"));
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->sources.at("util.h"), "#pragma once\n#define TILE 8");
}

TEST(edit, paths_must_stay_inside_the_bundle) {
  for (const std::string p : {"../kernel.cpp", "/etc/passwd", "a/../../b.h", "sub/../../x.cpp"}) {
    const auto e = apply_error("@@@ WHOLE " + p + "\nint x;\n@@@ END\n");
    EXPECT_TRUE(has(e.message, "outside the bundle")) << p << ": " << e.message;
  }
  EXPECT_TRUE(
      has(apply_error("@@@ WHOLE kernel.toml\nflags = []\n@@@ END\n").message, "FLAGS block"));
  EXPECT_TRUE(has(apply_error("@@@ WHOLE .hidden.h\nint x;\n@@@ END\n").message, "hidden"));
  EXPECT_TRUE(has(apply_error("@@@ WHOLE sub\\x.h\nint x;\n@@@ END\n").message, "relative path"));
  const auto txt = apply_error("@@@ WHOLE notes.txt\nhello\n@@@ END\n");
  EXPECT_EQ(txt.path, "notes.txt");
  EXPECT_TRUE(has(txt.message, ".cuh")) << txt.message;  // lists what is allowed
  // A SEARCH/REPLACE on a file that does not exist says how to create one.
  const auto missing = apply_error(block("other.cpp", "a\n", "b\n"));
  EXPECT_TRUE(has(missing.message, "files: kernel.cpp, util.h")) << missing.message;
  EXPECT_TRUE(has(missing.message, "@@@ WHOLE other.cpp")) << missing.message;
}

TEST(edit, new_file_and_normalized_path) {
  const std::string reply = "@@@ WHOLE ./inc/tile.cuh\n```cpp\n#define TILE 16\n```\n@@@ END\n" +
                            block("kernel.cpp", "#include \"lathe/abi.h\"\n",
                                  "#include \"lathe/abi.h\"\n#include \"inc/tile.cuh\"\n");
  auto r = apply_reply(make_bundle(), reply);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->sources.at("inc/tile.cuh"), "#define TILE 16\n");  // fence stripped
  EXPECT_EQ(r->manifest.files, (std::vector<std::string>{"inc/tile.cuh", "kernel.cpp", "util.h"}));
}

TEST(edit, size_caps) {
  const std::string big(max_file_bytes + 1, 'x');
  const auto e = apply_error("@@@ WHOLE big.h\n" + big + "\n@@@ END\n");
  EXPECT_TRUE(has(e.message, "at most 16 MiB")) << e.message.substr(0, 200);
  std::string reply;
  const std::string part(15u << 20, 'y');
  for (int i = 0; i < 5; ++i)
    reply += "@@@ WHOLE part" + std::to_string(i) + ".h\n" + part + "\n@@@ END\n";
  const auto total = apply_error(reply);
  EXPECT_TRUE(has(total.message, "at most 64 MiB")) << total.message.substr(0, 200);
}

TEST(edit, flags_add_and_remove_exactly) {
  auto r = apply_reply(make_bundle(), "@@@ FLAGS\n- -O3\n+ -O2\n+ -fopenmp\n@@@ END\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->manifest.flags, (std::vector<std::string>{"-O2", "-fopenmp"}));
  EXPECT_NE(r->hash, make_bundle().hash);
  EXPECT_TRUE(has(apply_error("@@@ FLAGS\n- -O2\n@@@ END\n").message, "not present"));
  EXPECT_TRUE(has(apply_error("@@@ FLAGS\n+ -O3\n@@@ END\n").message, "already present"));
  EXPECT_TRUE(has(apply_error("@@@ FLAGS\n+ -O3 -g\n@@@ END\n").message, "without spaces"));
  EXPECT_TRUE(has(apply_error("@@@ FLAGS\n-O2\n@@@ END\n").message, "'+ FLAG'"));
}

TEST(edit, isa_line_sets_the_manifest_isa) {
  const auto b = make_bundle();  // no isa: the host's level
  auto r = apply_reply(b, "Lower the target.\n@@@ ISA x86-64-v2\nThat is all.\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->manifest.isa, "x86-64-v2");
  EXPECT_EQ(r->sources, b.sources);
  EXPECT_EQ(r->manifest.flags, b.manifest.flags);
  EXPECT_NE(r->hash, b.hash);
  EXPECT_EQ(r->hash, bundle_hash(*r));
  // With files and flags in one reply; a CUDA level is syntax like any other (the gate decides).
  auto all =
      apply_reply(*r, block("kernel.cpp", "    y[i] = 2.0f * x[i];\n", "    y[i] = x[i];\n") +
                          "@@@ FLAGS\n+ -fopenmp\n@@@ END\n@@@ ISA sm_90a\n");
  ASSERT_TRUE(all.has_value()) << all.error().message;
  EXPECT_EQ(all->manifest.isa, "sm_90a");
  EXPECT_EQ(all->manifest.flags, (std::vector<std::string>{"-O3", "-fopenmp"}));
  // The same level again is not a change; the message says what the manifest holds.
  const auto same = apply_error("@@@ ISA x86-64-v2\n", *r);
  EXPECT_EQ(same.path, "kernel.toml");
  EXPECT_TRUE(has(same.message, "already x86-64-v2: not a change")) << same.message;
  // Levels are letters, digits and _ - . only: nothing rides along into -march=LEVEL.
  for (const char* bad : {"x86-64 -O0", "native;rm", "x86-64-v3,code=sm_90", "-march=native"}) {
    const auto e = apply_error(std::string("@@@ ISA ") + bad + "\n");
    EXPECT_TRUE(has(e.message, "letters, digits and _ - . only")) << bad << ": " << e.message;
    EXPECT_TRUE(has(e.message, "current isa: none")) << e.message;
  }
  EXPECT_TRUE(has(apply_error(std::string("@@@ ISA ") + std::string(65, 'v') + "\n").message,
                  "letters, digits"));
  EXPECT_TRUE(has(apply_error("@@@ ISA\n").message, "'@@@ ISA' needs a level"));
  EXPECT_TRUE(has(apply_error("@@@ ISA x86-64-v2\n@@@ ISA x86-64-v3\n").message,
                  "reply line 2: a second '@@@ ISA' line"));
  // kernel.toml is no file to edit; the hint names both manifest blocks.
  EXPECT_TRUE(has(apply_error("@@@ WHOLE kernel.toml\nisa = \"x86-64\"\n@@@ END\n").message,
                  "'@@@ ISA level'"));
}

TEST(edit, isa_parses_alone_and_unbares_a_bare_bundle) {
  auto e = parse_edits("prose\n@@@ ISA x86-64-v4   \n");
  ASSERT_TRUE(e.has_value()) << e.error().message;
  EXPECT_FALSE(e->empty());
  EXPECT_TRUE(e->files.empty() && e->flags.empty());
  EXPECT_EQ(e->isa.value_or(""), "x86-64-v4");  // trailing blanks are no part of it
  kernel_bundle bare;
  bare.name = "k";
  bare.manifest.entry = "k.cpp";
  bare.manifest.files = {"k.cpp"};
  bare.manifest.flags = {"-O3"};
  bare.sources["k.cpp"] = kernel_src;
  bare.bare = true;
  bare.hash = bundle_hash(bare);
  auto r = apply(bare, *e);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_FALSE(r->bare);  // a single file cannot carry its isa: kernel.toml must be written
}

TEST(edit, delete_and_invalid) {
  auto r = apply_reply(make_bundle(), "@@@ DELETE util.h\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->manifest.files, std::vector<std::string>{"kernel.cpp"});
  EXPECT_TRUE(has(apply_error("@@@ DELETE kernel.cpp\n").message, "entry file"));
  EXPECT_TRUE(has(apply_error("@@@ DELETE nope.h\n").message, "no such file"));
  const auto inv = apply_error("@@@ INVALID kernel.cpp\nreplaced by a symbolic link\n@@@ END\n");
  EXPECT_EQ(inv.path, "kernel.cpp");
  EXPECT_TRUE(has(inv.message, "symbolic link"));
}

TEST(edit, malformed_replies_fail_with_the_reply_line) {
  EXPECT_TRUE(has(apply_error("Looks good to me!\n").message, "no edit"));
  EXPECT_TRUE(
      has(apply_error("@@@ FILE kernel.cpp\n<<<<<<< SEARCH\nint x;\n>>>>>>> REPLACE\n").message,
          "expected '=======' after its SEARCH text, found '>>>>>>> REPLACE' on reply "
          "line 4"));
  EXPECT_TRUE(has(apply_error("x\n@@@ WHOLE a.h\nint x;\n").message,
                  "a.h (reply line 2): '@@@ WHOLE' without its '@@@ END' line"));
  EXPECT_TRUE(has(apply_error("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n").message,
                  "outside a FILE block"));
  EXPECT_TRUE(has(apply_error("@@@ PATCH kernel.cpp\n").message, "unknown marker"));
  EXPECT_TRUE(has(apply_error("@@@ FILE kernel.cpp\nprose\n").message, "no SEARCH/REPLACE"));
  EXPECT_TRUE(has(apply_error("@@@ FILE\n").message, "needs a file path"));
  EXPECT_TRUE(
      has(apply_error(block("kernel.cpp", "", "int y;\n")).message, "SEARCH text is empty"));
}

TEST(edit, unchanged_result_is_not_an_edit) {
  const auto e =
      apply_error(block("kernel.cpp", "#include \"lathe/abi.h\"\n", "#include \"lathe/abi.h\"\n"));
  EXPECT_TRUE(has(e.message, "unchanged")) << e.message;
}

TEST(edit, fences_and_prose_around_blocks) {
  const std::string reply =
      "Here is the change:\n```\n@@@ FILE kernel.cpp\n```cpp\n<<<<<<< SEARCH\n"
      "    y[i] = 2.0f * x[i];\n=======\n    y[i] = x[i] * 2.0f;\n>>>>>>> REPLACE\n```\n"
      "This keeps the result bit-identical.\n";
  auto r = apply_reply(make_bundle(), reply);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_TRUE(has(r->sources.at("kernel.cpp"), "x[i] * 2.0f"));
}

TEST(edit, render_then_parse_gives_the_same_edits) {
  edit_set e;
  e.files.push_back(
      {"kernel.cpp", file_edit_kind::blocks, {{"a\n", "b\nc\n", 0}, {"d\n", "", 0}}, {}, 0});
  e.files.push_back({"new.h", file_edit_kind::whole, {}, "int x;\n", 0});
  e.files.push_back({"old.h", file_edit_kind::remove, {}, {}, 0});
  e.flags = {{true, "-fopenmp"}, {false, "-O3"}};
  e.isa = "x86-64-v2";
  auto back = parse_edits(render_edits(e));
  ASSERT_TRUE(back.has_value()) << back.error().message;
  ASSERT_EQ(back->files.size(), 3u);
  EXPECT_EQ(back->files[0].blocks.size(), 2u);
  EXPECT_EQ(back->files[0].blocks[0].replace, "b\nc\n");
  EXPECT_EQ(back->files[0].blocks[1].replace, "");
  EXPECT_EQ(back->files[1].contents, "int x;\n");
  EXPECT_EQ(back->files[2].kind, file_edit_kind::remove);
  ASSERT_EQ(back->flags.size(), 2u);
  EXPECT_EQ(back->flags[1].flag, "-O3");
  EXPECT_FALSE(back->flags[1].add);
  EXPECT_EQ(back->isa.value_or(""), "x86-64-v2");
  // An ISA change alone renders as its one line, and parses back to it.
  edit_set only;
  only.isa = "sm_90";
  EXPECT_EQ(render_edits(only), "@@@ ISA sm_90\n");
  auto again = parse_edits(render_edits(only));
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->isa.value_or(""), "sm_90");
  EXPECT_TRUE(again->files.empty() && again->flags.empty());
}

TEST(edit, edited_bundle_writes_and_loads_back_with_the_same_hash) {
  test::temp_dir tmp;
  test::write_file(tmp / "k/kernel.cpp", kernel_src);
  test::write_file(tmp / "k/kernel.toml", "flags = [\"-O3\"]\n");
  auto b = load_bundle(tmp / "k");
  ASSERT_TRUE(b.has_value()) << b.error().message;
  auto r = apply_reply(
      *b, "@@@ WHOLE inc/t.h\n#define T 1\n@@@ END\n@@@ FLAGS\n+ -g\n@@@ END\n@@@ ISA x86-64-v2\n");
  ASSERT_TRUE(r.has_value()) << r.error().message;
  ASSERT_TRUE(write_bundle(*r, tmp / "out").has_value());
  auto again = load_bundle(tmp / "out");
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->hash, r->hash);
  EXPECT_EQ(again->sources.at("inc/t.h"), "#define T 1\n");
  EXPECT_EQ(again->manifest.isa, "x86-64-v2");
}

}  // namespace
}  // namespace lathe::agent
