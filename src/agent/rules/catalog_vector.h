// Shared by vector_access.remove (catalog_vector.cpp) and vector_access.add
// (catalog_vector_fold.cpp): the vector types, the pointer declarations they read and the scalar
// text backward writes and forward recognizes. Not part of the catalog's API.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/rules/catalog_detail.h"

namespace lathe::agent::rules::detail::vec {

struct vtype {
  std::string_view name, component, make;
  int lanes;
};

// The half-precision pairs are 32-bit accesses (cuda_fp16.h / cuda_bf16.h: members .x and .y,
// host-and-device makers make_half2 and make_bfloat162); each spelling of a type keeps its own
// component spelling (`half2` over `half`, `__half2` over `__half`), so the scalar pointer the
// backward step writes names the type the kernel's author used.
inline const vtype kTypes[] = {{"float4", "float", "make_float4", 4},
                               {"float2", "float", "make_float2", 2},
                               {"int4", "int", "make_int4", 4},
                               {"int2", "int", "make_int2", 2},
                               {"uint4", "unsigned int", "make_uint4", 4},
                               {"uint2", "unsigned int", "make_uint2", 2},
                               {"double2", "double", "make_double2", 2},
                               {"__half2", "__half", "make_half2", 2},
                               {"half2", "half", "make_half2", 2},
                               {"__nv_bfloat162", "__nv_bfloat16", "make_bfloat162", 2},
                               {"nv_bfloat162", "nv_bfloat16", "make_bfloat162", 2}};
inline const char* const kLanes[] = {"x", "y", "z", "w"};
inline const std::set<std::string_view> kLoads = {"__ldg",  "__ldcs", "__ldcg",
                                                  "__ldca", "__ldlu", "__ldcv"};
inline const std::set<std::string_view> kStores = {"__stcs", "__stcg", "__stwb", "__stwt"};

const vtype* vtype_of(std::string_view n);
// Whether a declared type ("const float* __restrict__") names `component` as whole words
// ("unsigned int" two of them): `float` is not found in `float4`, nor `half` in `__half2`.
bool names_component(std::string_view type, std::string_view component);

// A declaration `[const] T* NAME = INIT;` in a function body.
struct decl {
  token_span whole;  // first token … `;`
  bool is_const = false;
  std::string type, name;
  token_span init;  // after `=`, before `;`
};
std::vector<decl> pointer_decls(const source_view& v, const function& f);

// One rewritten access: the bytes it covers and its new text.
struct use {
  uint32_t from, to;
  std::string scalar;
};

// `4 * i + k` (`4 * (i + 1) + k` for a compound index).
std::string lane_index(const vtype& t, const std::string& idx, int k);
// The scalar forms. `ld`/`st` empty: subscripts (`p[4 * i]`), else `LD(p + 4 * i)`.
std::string scalar_load(const vtype& t, const std::string& p, const std::string& idx,
                        std::string_view ld);
std::string scalar_store(const vtype& t, const std::string& p, const std::string& idx,
                         const std::string& value, std::string_view st);

const rule* vector_add_rule();

}  // namespace lathe::agent::rules::detail::vec
