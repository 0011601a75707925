// Expecting a weave::internal::Error: its status, and words its message
// must contain (the quantity or argument it names).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "core/error.hpp"

namespace weave_test {

template <class Body>
void expect_error(Body&& body, weave_status_t status, std::initializer_list<const char*> words) {
  try {
    body();
    ADD_FAILURE() << "no error; expected " << weave::internal::status_name(status);
  } catch (const weave::internal::Error& e) {
    EXPECT_EQ(e.status(), status) << weave::internal::status_name(e.status()) << ": " << e.what();
    for (const char* w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

}  // namespace weave_test
