// Reading the public structs by their struct_size: the fields a caller's
// header knew are copied, newer fields keep their zero defaults, and a size
// that no version of the struct ever had is an error naming the struct.
//
// Every version of a struct appends fields, so each struct's known sizes
// below grow by one entry per version: the size at each earlier version
// stays accepted. Add the new sizeof when a field is appended.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "weave/weave.h"

namespace weave::internal {

template <class T>
struct StructVersions;

// The size an earlier version of T had when it ended where `end` (the offset
// of the first field appended later) is: rounded up to T's alignment.
template <class T>
constexpr std::size_t size_up_to(std::size_t end) {
  return (end + alignof(T) - 1) / alignof(T) * alignof(T);
}

// Since struct_size was introduced (Weave 0.2): the sizes on LP64 targets.
template <>
struct StructVersions<weave_matrix_desc_t> {
  static constexpr const char* name = "weave_matrix_desc_t";
  static constexpr const char* initializer = "WEAVE_MATRIX_DESC_INIT";
  // Weave 0.2 ended after memory; the block-cyclic fields (mb ... col_start)
  // were appended.
  static constexpr std::size_t sizes[] = {size_up_to<weave_matrix_desc_t>(offsetof(weave_matrix_desc_t, mb)),
                                          sizeof(weave_matrix_desc_t)};
};
template <>
struct StructVersions<weave_plan_desc_t> {
  static constexpr const char* name = "weave_plan_desc_t";
  static constexpr const char* initializer = "WEAVE_PLAN_DESC_INIT";
  static constexpr std::size_t sizes[] = {sizeof(weave_plan_desc_t)};
};
template <>
struct StructVersions<weave_execute_args_t> {
  static constexpr const char* name = "weave_execute_args_t";
  static constexpr const char* initializer = "WEAVE_EXECUTE_ARGS_INIT";
  // Weave 0.2 ended after gathered_a_elements; alpha_imag and beta_imag
  // (complex scalars) were appended.
  static constexpr std::size_t sizes[] = {size_up_to<weave_execute_args_t>(offsetof(weave_execute_args_t, alpha_imag)),
                                          sizeof(weave_execute_args_t)};
};
template <>
struct StructVersions<weave_plan_info_t> {
  static constexpr const char* name = "weave_plan_info_t";
  static constexpr const char* initializer = "WEAVE_PLAN_INFO_INIT";
  // Weave 0.2 ended after bias_type; status was appended.
  static constexpr std::size_t sizes[] = {size_up_to<weave_plan_info_t>(offsetof(weave_plan_info_t, status)),
                                          sizeof(weave_plan_info_t)};
};

// The caller's struct_size, checked against the sizes the struct has had.
// `argument` names the pointer in messages ("desc", "args").
template <class T>
std::size_t checked_struct_size(const T* from, const char* argument) {
  using Versions = StructVersions<T>;
  std::size_t size = 0;
  std::memcpy(&size, from, sizeof size);  // struct_size is the first field of every version
  if (size == 0)
    fail(WEAVE_ERROR_INVALID_VALUE, argument, "->struct_size is 0: set it to sizeof(", Versions::name, ") (",
         Versions::initializer, " does)");
  for (std::size_t known : Versions::sizes)
    if (size == known) return size;
  std::string known_sizes;
  for (std::size_t known : Versions::sizes) known_sizes += (known_sizes.empty() ? "" : ", ") + std::to_string(known);
  fail(WEAVE_ERROR_INVALID_VALUE, argument, "->struct_size is ", size, ", which no version of ", Versions::name,
       " has (this Weave knows ", known_sizes, "): set it to sizeof(", Versions::name,
       "), and build against the header of the Weave you link");
}

// A full-size copy of the caller's struct; fields beyond its size are zero.
template <class T>
T read_sized(const T* from, const char* argument) {
  const std::size_t size = checked_struct_size(from, argument);
  T value{};
  std::memcpy(static_cast<void*>(&value), from, size);
  value.struct_size = sizeof(T);
  return value;
}

// Writes the part of `value` that the caller's struct has room for.
template <class T>
void write_sized(T* to, const T& value, const char* argument) {
  const std::size_t size = checked_struct_size(to, argument);
  T sized = value;
  sized.struct_size = size;
  std::memcpy(static_cast<void*>(to), &sized, size);
}

}  // namespace weave::internal
