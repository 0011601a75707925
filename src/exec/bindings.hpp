// Turns a schedule Region into a pointer for one execute: the caller's
// buffers and the plan's workspace bound to the schedule's buffer table.
#pragma once

#include <array>
#include <cstdint>

#include "core/dtype.hpp"
#include "core/matrix.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::exec {

// A strided matrix in memory, as backends consume it.
struct MatrixRef {
  void* data = nullptr;
  int64_t rows = 0, cols = 0, ld = 1;
  DType dtype = DType::F64;
  Order order = Order::ColMajor;
  // Elements from (i, j) to (i, j + 1): how far apart the entries of a row
  // vector (a 1 x N bias) are.
  int64_t column_stride() const { return order == Order::ColMajor ? ld : 1; }
};

// A scalar's real and imaginary parts (the imaginary part is zero for
// real plans).
struct ScalarValue {
  double re = 0.0, im = 0.0;
};

// The values of the symbolic scalars of one execute.
struct Scalars {
  double alpha = 1.0, beta = 0.0;
  double alpha_imag = 0.0, beta_imag = 0.0;  // complex plans
  // The real part.
  double value(plan::Scalar s) const { return complex_value(s).re; }
  ScalarValue complex_value(plan::Scalar s) const {
    switch (s) {
      case plan::Scalar::Zero: return {0.0, 0.0};
      case plan::Scalar::One: return {1.0, 0.0};
      case plan::Scalar::Alpha: return {alpha, alpha_imag};
      case plan::Scalar::Beta: return {beta, beta_imag};
    }
    return {};
  }
};

// A region's matrix as backends see it, without a pointer (plan time).
MatrixRef layout_of(const plan::Schedule& schedule, const plan::Region& region);

struct Bindings {
  const plan::Schedule* schedule = nullptr;
  std::array<const void*, plan::kFirstWorkspaceBuffer> user{};  // A, B, C, bias, gathered
  int64_t gathered_ld = 0;                                       // 0: the schedule's tight one
  void* workspace = nullptr;
  // For transports that finish C themselves (PeerSum steps).
  Scalars scalars;

  MatrixRef resolve(const plan::Region& region) const;
};

}  // namespace weave::internal::exec
