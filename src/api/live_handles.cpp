#include "api/live_handles.hpp"

#include <mutex>
#include <unordered_map>

#include "core/error.hpp"

namespace weave::internal {

namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<const void*, HandleKind> live;
};

// Never destroyed: handles may be destroyed from other static destructors.
Registry& registry() {
  static Registry* r = new Registry;
  return *r;
}

const char* type_of(HandleKind kind) {
  switch (kind) {
    case HandleKind::Grid: return "weave_grid_t";
    case HandleKind::Matrix: return "weave_matrix_t";
    case HandleKind::Plan: return "weave_plan_t";
  }
  return "handle";
}

// Under the registry's lock: throws unless `handle` is live and of `kind`.
void check(const Registry& r, const void* handle, HandleKind kind, const char* name) {
  const auto found = r.live.find(handle);
  if (found == r.live.end())
    fail(WEAVE_ERROR_INVALID_VALUE, name, " = ", handle, " is not a live ", type_of(kind),
         ": destroyed already, or never created by Weave");
  if (found->second != kind)
    fail(WEAVE_ERROR_INVALID_VALUE, name, " = ", handle, " is a ", type_of(found->second), ", not a ", type_of(kind));
}

}  // namespace

void adopt_handle(const void* handle, HandleKind kind) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.live[handle] = kind;
}

void require_live(const void* handle, HandleKind kind, const char* name) {
  if (!handle) fail(WEAVE_ERROR_NULL_ARGUMENT, name, " is NULL");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  check(r, handle, kind, name);
}

bool release_handle(const void* handle, HandleKind kind, const char* name) {
  if (!handle) return false;
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  check(r, handle, kind, name);
  r.live.erase(handle);
  return true;
}

}  // namespace weave::internal
