// What weave_pblas.cpp keeps about its plan cache, for the binding's own
// tests (tests/scalapack). Not installed and not part of weave_pblas.h: a
// program using weave_p?gemm has no need of it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weave_pblas_internal {

// Plans kept: a code cycles through a few shapes; the least recently used
// beyond this goes.
inline constexpr std::size_t kCachedPlans = 32;

// This process's counts since it loaded the library (weave_pblas_release
// empties the cache but does not reset them).
struct PlanCacheCounters {
  std::uint64_t made = 0;     // plans made: a first call with a set of arguments, or one whose plan had gone
  std::uint64_t reused = 0;   // calls that executed a cached plan without making one
  std::uint64_t evicted = 0;  // plans dropped as the least recently used beyond kCachedPlans
  std::size_t cached = 0;     // plans kept now
};

__attribute__((visibility("default"))) PlanCacheCounters plan_cache_counters();

}  // namespace weave_pblas_internal
