// The elementwise chain a Model's forward computes, read from its statements (py_problem.h), for
// the mock's fused ModelNew: activations (relu, tanh, sigmoid, gelu, leaky_relu) and +, -, *, /
// by numbers and scalar attributes, over one base tensor: forward's input, or an nn.Linear
// applied to it (the Linear stays a torch call; only what follows it is fused). Anything else is
// an error that names what the mock does not fuse.
#pragma once

#include <cstdint>
#include <string>
#include <tl/expected.hpp>
#include <vector>

#include "py_problem.h"

namespace lathe::mock {

struct chain_node {
  enum class kind : uint8_t {
    base,       // one element of the base tensor
    number,     // text: the literal as written
    attribute,  // text: a scalar attribute of the Model (self.<text>)
    call,       // text: relu, tanh, sigmoid, gelu, gelu_tanh or leaky_relu; args: operand(s)
    binary,     // text: + - * /; args: left, right
    negate,     // args: operand
  };
  kind k = kind::base;
  std::string text;
  std::vector<chain_node> args;
  bool tensor = false;  // depends on the base tensor
};

struct fused_chain {
  chain_node expr;                   // the value forward returns, per element of the base
  std::string linear;                // "" when the base is forward's input, else the Linear's
                                     // attribute applied to the input first
  std::vector<std::string> scalars;  // the attributes expr reads, in order of first use
};

tl::expected<fused_chain, std::string> read_chain(const py_problem& p);

// The chain as Python-like text ("relu(x) * self.alpha"), for rationales.
std::string describe(const chain_node& n, const std::string& base);

}  // namespace lathe::mock
