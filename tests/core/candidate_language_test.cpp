// The candidate language (DESIGN.md): each name read back to its value, nothing else read, and a
// bundle's language told from its manifest and its entry (issue 44, item 1).
#include "core/candidate_language.h"

#include <gtest/gtest.h>

namespace lathe {
namespace {

kernel_bundle python_bundle(const std::string& source) {
  kernel_bundle k;
  k.manifest.lang = language::python;
  k.manifest.entry = "kernel.py";
  k.manifest.files = {"kernel.py"};
  k.sources["kernel.py"] = source;
  return k;
}

TEST(candidate_language, every_name_reads_back_and_nothing_else_does) {
  for (auto l : {candidate_language::c_abi, candidate_language::python, candidate_language::modelnew})
    EXPECT_EQ(parse_candidate_language(to_string(l)), l);
  EXPECT_EQ(to_string(candidate_language::c_abi), "c-abi");
  EXPECT_FALSE(parse_candidate_language("c_abi"));
  EXPECT_FALSE(parse_candidate_language("ModelNew"));
  EXPECT_FALSE(parse_candidate_language(""));
}

TEST(candidate_language, a_bundle_says_its_language) {
  kernel_bundle cpp;
  cpp.manifest.lang = language::cpp;
  EXPECT_EQ(language_of(cpp), candidate_language::c_abi);
  kernel_bundle cu;
  cu.manifest.lang = language::cuda;
  EXPECT_EQ(language_of(cu), candidate_language::c_abi);
  EXPECT_EQ(language_of(python_bundle("import torch\n\ndef launch(inputs, outputs, scalars):\n    pass\n")),
            candidate_language::python);
  EXPECT_EQ(language_of(python_bundle("import torch\nclass ModelNew(torch.nn.Module):\n    pass\n")),
            candidate_language::modelnew);
  EXPECT_EQ(language_of(python_bundle("class ModelNew(Model):\n    pass\n")), candidate_language::modelnew);
  // Only a top-level class counts: a nested one, a name that merely starts alike, a comment.
  EXPECT_EQ(language_of(python_bundle("def f():\n    class ModelNew:\n        pass\n")), candidate_language::python);
  EXPECT_EQ(language_of(python_bundle("class ModelNewer:\n    pass\n")), candidate_language::python);
  EXPECT_EQ(language_of(python_bundle("# class ModelNew: later\n")), candidate_language::python);
}

}  // namespace
}  // namespace lathe
