// Weave's C++ interface: RAII handles over the C API (weave.h). Errors throw
// weave::Error carrying the status and the library's message.
//
//   weave::Grid grid(MPI_COMM_WORLD, size, 1);
//   weave::Matrix a(grid, weave::block_rows(m, k, WEAVE_FLOAT64));
//   ...
//   weave::PlanDesc desc(WEAVE_AG_GEMM, a, b, c);
//   weave::Plan plan(grid, desc);
//   plan.execute(1.0, a_local, b_local, 0.0, c_local);
#ifndef WEAVE_WEAVE_HPP
#define WEAVE_WEAVE_HPP

#include <complex>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "weave/weave.h"

namespace weave {

class Error : public std::runtime_error {
 public:
  Error(weave_status_t status, const std::string& message)
      : std::runtime_error(std::string(weave_status_string(status)) + ": " + message), status_(status) {}
  weave_status_t status() const noexcept { return status_; }

 private:
  weave_status_t status_;
};

inline void check(weave_status_t status) {
  if (status != WEAVE_SUCCESS) throw Error(status, weave_last_error());
}

// The weave_dtype_t of a C++ element type. Typed calls (Plan::execute with
// typed pointers) check their buffers' types against the plan through it;
// `void` buffers are not checked. Specialise it for other element types
// (e.g. a 16-bit type of your own) to pass them typed.
template <class T>
struct dtype_of {
  static constexpr bool known = false;
};
template <>
struct dtype_of<void> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = weave_dtype_t{};  // not checked
};
template <>
struct dtype_of<float> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = WEAVE_FLOAT32;
};
template <>
struct dtype_of<double> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = WEAVE_FLOAT64;
};
template <>
struct dtype_of<std::complex<float>> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = WEAVE_COMPLEX64;
};
template <>
struct dtype_of<std::complex<double>> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = WEAVE_COMPLEX128;
};

// FP8 elements as their bytes (weave.h's WEAVE_FLOAT8_E4M3, _E5M2), for
// typed pointers to FP8 buffers; the library reads and writes the bytes.
struct float8_e4m3 {
  uint8_t bits;
};
struct float8_e5m2 {
  uint8_t bits;
};
template <>
struct dtype_of<float8_e4m3> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = WEAVE_FLOAT8_E4M3;
};
template <>
struct dtype_of<float8_e5m2> {
  static constexpr bool known = true;
  static constexpr weave_dtype_t value = WEAVE_FLOAT8_E5M2;
};

// The scale buffers of an execute with scaled (FP8) operands, this rank's
// (layouts: doc/fp8.md); unscaled operands leave theirs null.
struct Scales {
  const void* a = nullptr;
  const void* b = nullptr;
  void* gathered_a = nullptr;  // with WEAVE_FLAG_GATHERED_OUTPUT
};

namespace detail {
// Move-only owner of a C handle.
template <class Handle, weave_status_t (*Destroy)(Handle)>
class Owner {
 public:
  Owner() = default;
  explicit Owner(Handle h) : handle_(h) {}
  ~Owner() { reset(); }
  Owner(Owner&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Owner& operator=(Owner&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  Handle get() const noexcept { return handle_; }
  void reset() noexcept {
    if (handle_) Destroy(handle_);
    handle_ = nullptr;
  }

 private:
  Handle handle_ = nullptr;
};
}  // namespace detail

class Grid {
 public:
  // Collective. A P x 1 grid unless a shape is given.
  explicit Grid(MPI_Comm comm) { create(comm, size_of(comm), 1); }
  Grid(MPI_Comm comm, int prows, int pcols) { create(comm, prows, pcols); }

  weave_grid_t get() const noexcept { return owner_.get(); }

 private:
  // comm's size where MPI can tell it; else 1, and weave_grid_create says
  // what is wrong (MPI not initialized or finalized, MPI_COMM_NULL) with an
  // error instead of MPI's handler ending the process.
  static int size_of(MPI_Comm comm) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    int size = 1;
    if (initialized && !finalized && comm != MPI_COMM_NULL) MPI_Comm_size(comm, &size);
    return size;
  }

 public:
  std::pair<int, int> shape() const {
    int r = 0, c = 0;
    check(weave_grid_shape(get(), &r, &c));
    return {r, c};
  }
  std::pair<int, int> coords() const {
    int r = 0, c = 0;
    check(weave_grid_coords(get(), &r, &c));
    return {r, c};
  }
  // {size, my rank} of a group.
  std::pair<int, int> group(weave_group_t g = WEAVE_GROUP_GRID) const {
    int size = 0, rank = 0;
    check(weave_grid_group(get(), g, &size, &rank));
    return {size, rank};
  }

 private:
  void create(MPI_Comm comm, int prows, int pcols) {
    weave_grid_t h = nullptr;
    check(weave_grid_create(comm, prows, pcols, &h));
    owner_ = detail::Owner<weave_grid_t, weave_grid_destroy>(h);
  }
  detail::Owner<weave_grid_t, weave_grid_destroy> owner_;
};

// A matrix descriptor with owned counts (weave_matrix_desc_t points at them).
struct MatrixDesc {
  weave_matrix_desc_t desc{};
  std::vector<int64_t> row_counts, col_counts;

  MatrixDesc(int64_t rows, int64_t cols, weave_dtype_t dtype, weave_distribution_t distribution) {
    desc.rows = rows;
    desc.cols = cols;
    desc.dtype = dtype;
    desc.distribution = distribution;
  }
  MatrixDesc& group(weave_group_t g) { desc.group = g; return *this; }
  MatrixDesc& rows_per_rank(std::vector<int64_t> counts) { row_counts = std::move(counts); return *this; }
  MatrixDesc& cols_per_rank(std::vector<int64_t> counts) { col_counts = std::move(counts); return *this; }
  MatrixDesc& ld(int64_t value) { desc.ld = value; return *this; }
  MatrixDesc& order(weave_order_t o) { desc.order = o; return *this; }
  MatrixDesc& memory(weave_memory_t m) { desc.memory = m; return *this; }
  MatrixDesc& scale_mode(weave_scale_mode_t m) { desc.scale_mode = m; return *this; }
  // BLOCK_CYCLIC: blocks of mb x nb, the first on grid row rsrc and column
  // csrc (ScaLAPACK's MB_, NB_, RSRC_, CSRC_; -1: every grid row/column).
  MatrixDesc& blocks(int64_t mb, int64_t nb, int32_t rsrc = 0, int32_t csrc = 0) {
    desc.mb = mb;
    desc.nb = nb;
    desc.rsrc = rsrc;
    desc.csrc = csrc;
    return *this;
  }
  // BLOCK_CYCLIC: the matrix starts at 0-based global (row, col) of the
  // block-cyclic matrix in the local arrays (ScaLAPACK's IA - 1, JA - 1).
  MatrixDesc& start(int64_t row, int64_t col) { desc.row_start = row; desc.col_start = col; return *this; }

  // The C descriptor, with the count pointers refreshed.
  const weave_matrix_desc_t& c_desc() {
    desc.row_counts = row_counts.empty() ? nullptr : row_counts.data();
    desc.col_counts = col_counts.empty() ? nullptr : col_counts.data();
    return desc;
  }
};

inline MatrixDesc block_rows(int64_t rows, int64_t cols, weave_dtype_t t) {
  return MatrixDesc(rows, cols, t, WEAVE_DIST_BLOCK_ROW);
}
inline MatrixDesc block_cols(int64_t rows, int64_t cols, weave_dtype_t t) {
  return MatrixDesc(rows, cols, t, WEAVE_DIST_BLOCK_COLUMN);
}
inline MatrixDesc replicated(int64_t rows, int64_t cols, weave_dtype_t t) {
  return MatrixDesc(rows, cols, t, WEAVE_DIST_REPLICATED);
}
inline MatrixDesc block_2d(int64_t rows, int64_t cols, weave_dtype_t t) {
  return MatrixDesc(rows, cols, t, WEAVE_DIST_BLOCK_2D);
}
// ScaLAPACK's 2-D block-cyclic layout: mb x nb blocks from grid (rsrc, csrc).
inline MatrixDesc block_cyclic(int64_t rows, int64_t cols, weave_dtype_t t, int64_t mb, int64_t nb, int32_t rsrc = 0,
                               int32_t csrc = 0) {
  return MatrixDesc(rows, cols, t, WEAVE_DIST_BLOCK_CYCLIC).blocks(mb, nb, rsrc, csrc);
}

class Matrix {
 public:
  // Collective over the grid.
  Matrix(const Grid& grid, MatrixDesc desc) {
    weave_matrix_t h = nullptr;
    check(weave_matrix_create(grid.get(), &desc.c_desc(), &h));
    owner_ = detail::Owner<weave_matrix_t, weave_matrix_destroy>(h);
  }

  weave_matrix_t get() const noexcept { return owner_.get(); }
  int64_t local_rows() const { return shape().first; }
  int64_t local_cols() const { return shape().second; }
  int64_t row_offset() const { return offset().first; }
  int64_t col_offset() const { return offset().second; }
  int64_t ld() const {
    int64_t value = 0;
    check(weave_matrix_ld(get(), &value));
    return value;
  }
  // Elements to allocate for this rank's block.
  int64_t local_elements() const {
    int64_t value = 0;
    check(weave_matrix_local_elements(get(), &value));
    return value;
  }

 private:
  std::pair<int64_t, int64_t> shape() const {
    int64_t r = 0, c = 0;
    check(weave_matrix_local_shape(get(), &r, &c));
    return {r, c};
  }
  std::pair<int64_t, int64_t> offset() const {
    int64_t r = 0, c = 0;
    check(weave_matrix_local_offset(get(), &r, &c));
    return {r, c};
  }
  detail::Owner<weave_matrix_t, weave_matrix_destroy> owner_;
};

// A plan description: the C struct with convenient setters.
struct PlanDesc {
  weave_plan_desc_t desc{};

  PlanDesc(weave_operation_t operation, const Matrix& a, const Matrix& b, const Matrix& c) {
    desc.operation = operation;
    desc.a = a.get();
    desc.b = b.get();
    desc.c = c.get();
  }
  PlanDesc& ops(weave_op_t op_a, weave_op_t op_b) { desc.op_a = op_a; desc.op_b = op_b; return *this; }
  PlanDesc& bias(const Matrix& m) { desc.bias = m.get(); return *this; }
  PlanDesc& group(weave_group_t g) { desc.group = g; return *this; }
  PlanDesc& algorithm(weave_algorithm_t a) { desc.algorithm = a; return *this; }
  PlanDesc& backend(weave_backend_t b) { desc.backend = b; return *this; }
  PlanDesc& transport(weave_transport_t t) { desc.transport = t; return *this; }
  PlanDesc& direction(weave_direction_t d) { desc.direction = d; return *this; }
  PlanDesc& chunks_per_shard(int32_t c) { desc.chunks_per_shard = c; return *this; }
  PlanDesc& compute_streams(int32_t s) { desc.compute_streams = s; return *this; }
  PlanDesc& progress(weave_progress_t p) { desc.progress = p; return *this; }
  PlanDesc& timeout_ms(int32_t t) { desc.timeout_ms = t; return *this; }
  PlanDesc& flags(int32_t f) { desc.flags = f; return *this; }
  PlanDesc& wire_type(weave_dtype_t t) { desc.wire_type = t; return *this; }
};

class Plan {
 public:
  // Collective over the grid.
  Plan(const Grid& grid, const PlanDesc& desc) {
    weave_plan_t h = nullptr;
    check(weave_plan_create(grid.get(), &desc.desc, &h));
    owner_ = detail::Owner<weave_plan_t, weave_plan_destroy>(h);
  }

  weave_plan_t get() const noexcept { return owner_.get(); }
  std::string describe() const {
    const char* text = nullptr;
    check(weave_plan_describe(get(), &text));
    return text;
  }
  weave_plan_info_t info() const {
    weave_plan_info_t value{};
    check(weave_plan_get_info(get(), &value));
    return value;
  }

  // Collective over the operation's group. The pointers' element types must
  // be the plan's (weave_plan_info_t's a_type, b_type, c_type, bias_type):
  // a buffer of another type is WEAVE_ERROR_UNSUPPORTED_TYPE on every rank
  // of the group, before anything is read or written. Pointers to void are
  // not checked.
  template <class TA, class TB, class TC>
  void execute(double alpha, const TA* a, const TB* b, double beta, TC* c, const TC* bias = nullptr,
               void* stream = nullptr) const {
    execute(std::complex<double>(alpha), a, b, std::complex<double>(beta), c, Scales{}, bias, stream);
  }
  // As above, with the scales of scaled (FP8) operands.
  template <class TA, class TB, class TC>
  void execute(double alpha, const TA* a, const TB* b, double beta, TC* c, const Scales& scales,
               const TC* bias = nullptr, void* stream = nullptr) const {
    execute(std::complex<double>(alpha), a, b, std::complex<double>(beta), c, scales, bias, stream);
  }
  // Complex scalars (complex plans; a real plan refuses a non-zero imaginary part).
  template <class TA, class TB, class TC>
  void execute(std::complex<double> alpha, const TA* a, const TB* b, std::complex<double> beta, TC* c,
               const TC* bias = nullptr, void* stream = nullptr) const {
    execute(alpha, a, b, beta, c, Scales{}, bias, stream);
  }
  template <class TA, class TB, class TC>
  void execute(std::complex<double> alpha, const TA* a, const TB* b, std::complex<double> beta, TC* c,
               const Scales& scales, const TC* bias = nullptr, void* stream = nullptr) const {
    static_assert(dtype_of<TA>::known && dtype_of<TB>::known && dtype_of<TC>::known,
                  "weave::Plan::execute: an element type without a weave::dtype_of specialisation");
    weave_execute_args_t args{};
    args.alpha = alpha.real();
    args.beta = beta.real();
    args.alpha_imag = alpha.imag();
    args.beta_imag = beta.imag();
    args.a = a;
    args.b = b;
    args.c = c;
    args.bias = bias;
    args.stream = stream;
    args.a_scale = scales.a;
    args.b_scale = scales.b;
    args.gathered_a_scale = scales.gathered_a;
    args.buffer_checks = WEAVE_CHECK_TYPES;  // a void buffer's type is 0: not checked
    args.a_type = dtype_of<TA>::value;
    args.b_type = dtype_of<TB>::value;
    args.c_type = dtype_of<TC>::value;
    args.bias_type = dtype_of<TC>::value;
    check(weave_execute_ex(get(), &args));
  }
  void execute(const weave_execute_args_t& args) const { check(weave_execute_ex(get(), &args)); }
  void write_trace(const std::string& path) const { check(weave_plan_write_trace(get(), path.c_str())); }

 private:
  detail::Owner<weave_plan_t, weave_plan_destroy> owner_;
};

}  // namespace weave

#endif  // WEAVE_WEAVE_HPP
