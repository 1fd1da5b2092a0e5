#include "gate/cpu/op_record.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace lathe::gate {

const char* to_string(torch_compute c) {
  switch (c) {
    case torch_compute::allowed: return "allowed";
    case torch_compute::forbid: return "forbid";
    case torch_compute::fallback: return "fallback";
  }
  return "?";
}

std::set<std::string, std::less<>> parse_plumbing(std::string_view text) {
  std::set<std::string, std::less<>> out;
  std::string word;
  bool comment = false;
  for (char c : text) {
    if (c == '\n') comment = false;
    if (c == '#') comment = true;
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
    if (comment || space) {
      if (!word.empty()) out.insert(std::move(word));
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) out.insert(std::move(word));
  return out;
}

// lathe's own file, beside its Python workers (never a candidate's).
result<std::set<std::string, std::less<>>> read_plumbing(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return fail(errc::io_error, "cannot read " + file.string());
  auto names = parse_plumbing(text.str());
  if (names.empty()) return fail(errc::invalid_argument, file.string() + " names no operation");
  return names;
}

void op_record::feed(std::string_view bytes, bool judged) {
  for (char c : bytes) {
    if (!violation_.empty()) return;  // the first reason stays; the rest need no reading
    if (!in_record_) {
      if (c != record_start) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned char>(c));
        violation_ = std::string("the candidate wrote to lathe's record of its torch operations (byte ") +
                     hex + " where a record starts): only lathe's observer writes there";
        return;
      }
      in_record_ = true;
      name_.clear();
      continue;
    }
    if (c == '\n') {
      in_record_ = false;
      ++ops_;
      judge(name_, judged);
      continue;
    }
    if (c == record_start || name_.size() >= name_cap) {
      violation_ = "the candidate wrote to lathe's record of its torch operations (a malformed record): "
                   "only lathe's observer writes there";
      return;
    }
    name_ += c;
  }
}

void op_record::judge(std::string_view name, bool judged) {
  if (!judged || name.empty() || policy_.plumbing.count(name)) return;
  if (policy_.mode == torch_compute::forbid)
    violation_ = "torch compute on a task that allows no libraries: aten::" + std::string(name) +
                 " ran (lathe's record of the worker's torch operations); a Python kernel here "
                 "computes with its own code (an extension, Triton)";
  else if (policy_.mode == torch_compute::fallback && policy_.refused.count(name))
    violation_ = "torch fallback: aten::" + std::string(name) +
                 " ran in ModelNew (lathe's record of the worker's torch operations), an op the "
                 "reference's Model runs (KernelBench's torch fallback, refused with "
                 "--refuse-torch-fallback)";
}

}  // namespace lathe::gate
