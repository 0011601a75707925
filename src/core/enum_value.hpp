// The integer a caller stored in an enum-typed field or argument of the C
// API, read without loading it as the enum type.
//
// C lets a program store any int in an enum object, and weave_status_t,
// weave_dtype_t, ... reach Weave from C, Fortran and C++ callers alike. In
// C++ a value outside the range of an enum without a fixed underlying type
// is undefined behaviour once it is loaded as that type (UBSan reports it),
// so the library never compares or switches on a caller's enum directly: it
// reads the bytes as an int, validates the int, and only then converts it
// to a public or internal enum.
#pragma once

#include <cstring>
#include <type_traits>

namespace weave::internal {

template <class Enum>
int enum_value(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int),
                "the C API's enums are int-sized in every supported compiler");
  int value = 0;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

}  // namespace weave::internal
