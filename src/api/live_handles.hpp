// The handles the C API has handed out and not yet taken back. Every call
// that takes a handle looks it up first, so a destroyed handle (destroyed
// twice, or used after weave_*_destroy), a handle of another kind (a matrix
// passed as a plan) or a stray pointer is WEAVE_ERROR_INVALID_VALUE naming
// the argument, never a crash inside Weave. (A destroyed handle whose
// memory a newer handle of the same kind reuses cannot be told from it.)
#pragma once

#include "api/handles.hpp"

namespace weave::internal {

enum class HandleKind { Grid, Matrix, Plan };

void adopt_handle(const void* handle, HandleKind kind);
// Throws WEAVE_ERROR_NULL_ARGUMENT for NULL, WEAVE_ERROR_INVALID_VALUE for
// a pointer that is not a live handle of `kind`.
void require_live(const void* handle, HandleKind kind, const char* name);
// Forgets a live handle of `kind` (the caller then deletes it); the same
// errors as require_live, but NULL is no handle and no error (false).
bool release_handle(const void* handle, HandleKind kind, const char* name);

inline void adopt(weave_grid_s* h) { adopt_handle(h, HandleKind::Grid); }
inline void adopt(weave_matrix_s* h) { adopt_handle(h, HandleKind::Matrix); }
inline void adopt(weave_plan_s* h) { adopt_handle(h, HandleKind::Plan); }
inline void require_live(const weave_grid_s* h, const char* name) { require_live(h, HandleKind::Grid, name); }
inline void require_live(const weave_matrix_s* h, const char* name) { require_live(h, HandleKind::Matrix, name); }
inline void require_live(const weave_plan_s* h, const char* name) { require_live(h, HandleKind::Plan, name); }

}  // namespace weave::internal
