// Operator families (core/op_family.h): task operators and the aten ops a KernelBench Model runs
// map onto one closed set; a problem's family is its heaviest op's; which families serve each
// other's cards.
#include "core/op_family.h"

#include <gtest/gtest.h>

#include "core/enum_parse.h"

namespace lathe {
namespace {

TEST(op_family, task_operators_and_aten_ops_map_onto_one_set) {
  // Shipped tasks' operators (tasks/*/task.toml).
  EXPECT_EQ(family_of_op("gemm"), op_family::gemm);
  EXPECT_EQ(family_of_op("conv2d"), op_family::conv);
  EXPECT_EQ(family_of_op("attention"), op_family::attention);
  EXPECT_EQ(family_of_op("layernorm"), op_family::norm);
  EXPECT_EQ(family_of_op("rmsnorm"), op_family::norm);
  EXPECT_EQ(family_of_op("softmax"), op_family::softmax);
  EXPECT_EQ(family_of_op("mean"), op_family::reduction);
  EXPECT_EQ(family_of_op("silu"), op_family::elementwise);
  EXPECT_EQ(family_of_op("transpose"), op_family::data_movement);
  EXPECT_EQ(family_of_op("topk"), op_family::other);
  // What python/lathe_ops.py records of KernelBench Models on torch 1.13 (CPU).
  EXPECT_EQ(family_of_op("addmm"), op_family::gemm);  // nn.Linear
  EXPECT_EQ(family_of_op("mm"), op_family::gemm);
  EXPECT_EQ(family_of_op("mkldnn_convolution"), op_family::conv);  // nn.Conv2d
  EXPECT_EQ(family_of_op("slow_conv_transpose2d"), op_family::conv);
  EXPECT_EQ(family_of_op("native_layer_norm"), op_family::norm);
  EXPECT_EQ(family_of_op("_softmax"), op_family::softmax);
  EXPECT_EQ(family_of_op("max_pool2d_with_indices"), op_family::pooling);
  EXPECT_EQ(family_of_op("sum"), op_family::reduction);
  for (const char* op : {"leaky_relu", "sigmoid", "mul", "div", "gelu", "tanh"})
    EXPECT_EQ(family_of_op(op), op_family::elementwise) << op;
  EXPECT_EQ(family_of_op("19_ReLU"), op_family::other);  // a problem's file stem is no operator
  EXPECT_EQ(family_of_op(""), op_family::other);
}

TEST(op_family, a_problems_family_is_its_heaviest_ops) {
  // tests/data/modelnew_run's level-2 problem: Linear, divide, sigmoid, scale, row sum.
  EXPECT_EQ(families_of_ops({"addmm", "div", "mul", "sigmoid", "sum"}),
            (std::vector<op_family>{op_family::gemm, op_family::reduction, op_family::elementwise}));
  EXPECT_EQ(families_of_ops({"mul", "sigmoid"}), std::vector<op_family>{op_family::elementwise});  // Swish
  EXPECT_EQ(families_of_ops({"relu", "mkldnn_convolution", "add"}),
            (std::vector<op_family>{op_family::conv, op_family::elementwise}));
  EXPECT_EQ(families_of_ops({"_softmax", "mm"}), (std::vector<op_family>{op_family::gemm, op_family::softmax}));
  EXPECT_TRUE(families_of_ops({}).empty());
}

TEST(op_family, related_families_are_the_groups_of_retrieval) {
  EXPECT_TRUE(related_families(op_family::gemm, op_family::conv));
  EXPECT_TRUE(related_families(op_family::attention, op_family::gemm));
  EXPECT_TRUE(related_families(op_family::norm, op_family::softmax));
  EXPECT_TRUE(related_families(op_family::reduction, op_family::norm));
  EXPECT_TRUE(related_families(op_family::elementwise, op_family::elementwise));
  EXPECT_FALSE(related_families(op_family::elementwise, op_family::reduction));
  EXPECT_FALSE(related_families(op_family::gemm, op_family::softmax));
  EXPECT_FALSE(related_families(op_family::pooling, op_family::conv));
  EXPECT_FALSE(related_families(op_family::other, op_family::other));  // unknown is related to nothing
  for (int i = 0; i <= static_cast<int>(op_family::other); ++i) {
    const auto f = static_cast<op_family>(i);
    EXPECT_EQ(parse_enum(to_string(f), op_family::other), f);
    EXPECT_EQ(family_of_op(to_string(f)), f) << to_string(f);  // a family's name is an operator of it
  }
}

}  // namespace
}  // namespace lathe
