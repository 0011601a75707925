// What each of Weave's environment variables that plans read accepts, in one
// place: plan creation checks every one that is set, whether or not the plan
// at hand reads it (an unknown value is an error, never ignored), and the
// planner's readers check their own words and ranges against these rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/planner.hpp"

namespace weave::internal::plan {

struct VariableSyntax {
  const char* name;
  std::vector<std::string> words;  // the values it takes; empty: an integer in [minimum, maximum]
  int64_t minimum = 0, maximum = 0;
};

// Every variable plans read but WEAVE_TIMEOUT (core/wait_bounds.hpp reads
// it, and checks it wherever it is read).
const std::vector<VariableSyntax>& variable_syntax();

// The row of `name`, or null.
const VariableSyntax* syntax_of(const std::string& name);

// `value` of integer variable `row` as a number; throws
// WEAVE_ERROR_INVALID_VALUE naming both where it is not an integer in the
// row's range (a value strtoll cannot represent, ERANGE, is out of range
// too, not its clamped LLONG_MAX).
int64_t integer_value(const VariableSyntax& row, const std::string& value);

// Throws WEAVE_ERROR_INVALID_VALUE naming the first variable of `env` whose
// value its row does not accept.
void check_environment_syntax(const Environment& env);

}  // namespace weave::internal::plan
