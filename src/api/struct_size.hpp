// Reading the public structs by their struct_size: the fields a caller's
// header knew are copied, newer fields keep their zero defaults, and a size
// that no version of the struct ever had is an error naming the struct.
//
// Every version of a struct appends fields, so each struct's known
// versions below grow by one entry per version: the size at each earlier
// version stays accepted. Add a version when a field is appended.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "weave/weave.h"

namespace weave::internal {

template <class T>
struct StructVersions;

// One version of a struct: its sizeof, and where its last field ends. The
// two differ by the padding up to the struct's alignment, where a field
// appended later may lie (weave_plan_desc_t's wire_type lies in the
// padding after flags): a caller of that version never set those bytes, so
// only the fields it had are read. What a version appends must make the
// sizeof grow (weave_plan_desc_t's `reserved` does), or the sizes of two
// versions would be one and the same.
struct StructVersion {
  std::size_t size;
  std::size_t fields_end;
};

// The version of T that ended where `end` (the offset of the first field
// appended later) is: its size rounded up to T's alignment.
template <class T>
constexpr StructVersion version_up_to(std::size_t end) {
  return {(end + alignof(T) - 1) / alignof(T) * alignof(T), end};
}
template <class T>
constexpr StructVersion current_version() {
  return {sizeof(T), sizeof(T)};
}

// Since struct_size was introduced (Weave 0.2): the sizes on LP64 targets.
template <>
struct StructVersions<weave_matrix_desc_t> {
  static constexpr const char* name = "weave_matrix_desc_t";
  static constexpr const char* initializer = "WEAVE_MATRIX_DESC_INIT";
  // Weave 0.2 ended after memory; scale_mode was appended with FP8 support,
  // then the block-cyclic fields (mb ... col_start), each in a release of
  // its own header.
  static constexpr StructVersion versions[] = {
      version_up_to<weave_matrix_desc_t>(offsetof(weave_matrix_desc_t, scale_mode)),
      version_up_to<weave_matrix_desc_t>(offsetof(weave_matrix_desc_t, mb)), current_version<weave_matrix_desc_t>()};
};
template <>
struct StructVersions<weave_plan_desc_t> {
  static constexpr const char* name = "weave_plan_desc_t";
  static constexpr const char* initializer = "WEAVE_PLAN_DESC_INIT";
  // Weave 0.2 ended after flags; wire_type (and reserved, which makes the
  // size grow) was appended with FP8 support.
  static constexpr StructVersion versions[] = {
      version_up_to<weave_plan_desc_t>(offsetof(weave_plan_desc_t, wire_type)), current_version<weave_plan_desc_t>()};
};
template <>
struct StructVersions<weave_execute_args_t> {
  static constexpr const char* name = "weave_execute_args_t";
  static constexpr const char* initializer = "WEAVE_EXECUTE_ARGS_INIT";
  // Weave 0.2 ended after gathered_a_elements; the scale buffers were
  // appended with FP8 support, then alpha_imag and beta_imag (complex
  // scalars).
  static constexpr StructVersion versions[] = {
      version_up_to<weave_execute_args_t>(offsetof(weave_execute_args_t, a_scale)),
      version_up_to<weave_execute_args_t>(offsetof(weave_execute_args_t, alpha_imag)),
      current_version<weave_execute_args_t>()};
};
template <>
struct StructVersions<weave_plan_info_t> {
  static constexpr const char* name = "weave_plan_info_t";
  static constexpr const char* initializer = "WEAVE_PLAN_INFO_INIT";
  // Weave 0.2 ended after bias_type; status was appended, then the scale
  // modes, scale sizes and wire type with FP8 support.
  static constexpr StructVersion versions[] = {
      version_up_to<weave_plan_info_t>(offsetof(weave_plan_info_t, status)),
      version_up_to<weave_plan_info_t>(offsetof(weave_plan_info_t, a_scale_mode)), current_version<weave_plan_info_t>()};
};

// The version of the caller's struct, by its struct_size, checked against
// the versions the struct has had. `argument` names the pointer in
// messages ("desc", "args").
template <class Versions>
constexpr bool sizes_grow() {
  std::size_t previous = 0;
  for (const StructVersion& v : Versions::versions) {
    if (v.size <= previous || v.fields_end > v.size) return false;
    previous = v.size;
  }
  return true;
}

template <class T>
StructVersion checked_struct_version(const T* from, const char* argument) {
  using Versions = StructVersions<T>;
  static_assert(sizes_grow<Versions>(), "every version of a public struct must be larger than the one before, or "
                                        "struct_size cannot tell them apart");
  std::size_t size = 0;
  std::memcpy(&size, from, sizeof size);  // struct_size is the first field of every version
  if (size == 0)
    fail(WEAVE_ERROR_INVALID_VALUE, argument, "->struct_size is 0: set it to sizeof(", Versions::name, ") (",
         Versions::initializer, " does)");
  for (const StructVersion& known : Versions::versions)
    if (size == known.size) return known;
  std::string known_sizes;
  for (const StructVersion& known : Versions::versions)
    known_sizes += (known_sizes.empty() ? "" : ", ") + std::to_string(known.size);
  fail(WEAVE_ERROR_INVALID_VALUE, argument, "->struct_size is ", size, ", which no version of ", Versions::name,
       " has (this Weave knows ", known_sizes, "): set it to sizeof(", Versions::name,
       "), and build against the header of the Weave you link");
}

// A full-size copy of the caller's struct; the fields beyond its version
// (and the padding after its last field) are zero.
template <class T>
T read_sized(const T* from, const char* argument) {
  const StructVersion version = checked_struct_version(from, argument);
  T value{};
  std::memcpy(static_cast<void*>(&value), from, version.fields_end);
  value.struct_size = sizeof(T);
  return value;
}

// Writes the fields that the caller's version of the struct has.
template <class T>
void write_sized(T* to, const T& value, const char* argument) {
  const StructVersion version = checked_struct_version(to, argument);
  T sized = value;
  sized.struct_size = version.size;
  std::memcpy(static_cast<void*>(to), &sized, version.fields_end);
}

}  // namespace weave::internal
