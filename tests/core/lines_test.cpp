// core/lines.h's split_lines, the one line splitter every layer uses (the edit format, the
// detectors, diffs, Python knobs): where lines begin and end, and what a CRLF leaves.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "core/lines.h"

namespace lathe {
namespace {

using lines = std::vector<std::string_view>;

TEST(split_lines, a_final_newline_ends_the_last_line_and_starts_none) {
  EXPECT_EQ(split_lines(""), lines{});
  EXPECT_EQ(split_lines("\n"), lines{""});
  EXPECT_EQ(split_lines("a"), lines{"a"});
  EXPECT_EQ(split_lines("a\n"), lines{"a"});
  EXPECT_EQ(split_lines("a\nb"), (lines{"a", "b"}));
  EXPECT_EQ(split_lines("a\n\nb\n\n"), (lines{"a", "", "b", ""}));
  EXPECT_EQ(split_lines("\na"), (lines{"", "a"}));
}

TEST(split_lines, a_carriage_return_is_kept_unless_dropped) {
  EXPECT_EQ(split_lines("a\r\nb\r"), (lines{"a\r", "b\r"}));
  EXPECT_EQ(split_lines("a\r\nb\r", carriage_return::dropped), (lines{"a", "b"}));
  // Only the one before the line's end: one inside a line stays.
  EXPECT_EQ(split_lines("a\rb\r\r\n", carriage_return::dropped), lines{"a\rb\r"});
}

TEST(split_lines, lines_are_views_into_the_text) {
  const std::string text = "first\nsecond";
  const auto l = split_lines(text);
  ASSERT_EQ(l.size(), 2u);
  EXPECT_EQ(l[1].data(), text.data() + 6);
}

}  // namespace
}  // namespace lathe
