// The structs behind the C API's opaque handles.
#pragma once

#include <memory>

#include "api/plan.hpp"
#include "core/grid.hpp"
#include "core/matrix.hpp"

struct weave_grid_s {
  std::shared_ptr<weave::internal::GridState> state;
};

struct weave_matrix_s {
  weave::internal::MatrixDesc desc;
};

struct weave_plan_s {
  std::unique_ptr<weave::internal::Plan> plan;
};
