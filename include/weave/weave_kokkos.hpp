// Weave with Kokkos Views: plans whose A, B, C and bias are rank-2 (bias:
// rank-1) Kokkos::Views, executed in order with a Kokkos execution-space
// instance. Header-only, over weave.hpp.
//
//   weave::KokkosPlan plan(grid, WEAVE_AG_GEMM,
//                          weave::block_rows(m, k, WEAVE_FLOAT64),
//                          weave::block_cols(k, n, WEAVE_FLOAT64),
//                          weave::block_cols(m, n, WEAVE_FLOAT64));
//   Kokkos::View<double**, Kokkos::LayoutLeft> a("A", plan.a().local_rows(), plan.a().local_cols());
//   ...
//   weave::execute(plan, 1.0, a, b, 0.0, c, Kokkos::DefaultHostExecutionSpace());
//
// What is checked:
//   at compile time: every matrix is a rank-2 View, LayoutLeft (column-major
//     descriptors) or LayoutRight (row-major ones); element type float,
//     double, weave::float8_e4m3 or weave::float8_e5m2 (FP8 A and B, with
//     their scales: weave::scales(a_scale, b_scale), rank-1 Views of float,
//     uint8_t for MXFP8) and, in a Kokkos built with CUDA,
//     Kokkos::Experimental::half_t and bhalf_t; C is not const; bias is
//     rank-1; the execution space can
//     reach every View's memory space; the memory spaces are ones Weave
//     knows (HostSpace, CudaHostPinnedSpace for host plans; CudaSpace,
//     CudaUVMSpace for device plans);
//   at run time, against the descriptors the plan was made from: element
//     type, memory (host or device), storage order, local extents and the
//     leading dimension (stride(1) of a LayoutLeft View, stride(0) of a
//     LayoutRight one). A mismatch on any rank throws weave::Error on every
//     rank of the operation's group, like every other bad argument.
//
// Ordering: a host plan fences the given instance (work already queued on it,
// e.g. the kernels that filled A and B, completes first) and returns with C
// complete. A device plan enqueues its work on the stream of the given
// Kokkos::Cuda instance, after what is already there, and returns at once.
//
// Weave and the application must use the same Kokkos installation; the
// KokkosPlan constructor checks that the versions agree. The application
// initializes Kokkos before creating Weave objects and finalizes it after
// destroying them (see doc/kokkos.md).
#ifndef WEAVE_WEAVE_KOKKOS_HPP
#define WEAVE_WEAVE_KOKKOS_HPP

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "weave/weave.hpp"

namespace weave {

namespace kokkos_detail {

// The Weave element type of a View's value type: the types weave::dtype_of
// names, and Kokkos's 16-bit types below.
template <class T, class = void>
struct element_type {
  static constexpr bool supported = false;
};
template <class T>
struct element_type<T, std::void_t<decltype(dtype_of<T>::value)>> {
  static constexpr bool supported = true;
  static constexpr weave_dtype_t value = dtype_of<T>::value;
};
// Kokkos's complex numbers are laid out as Weave's complex types.
template <>
struct element_type<Kokkos::complex<float>> {
  static constexpr bool supported = true;
  static constexpr weave_dtype_t value = WEAVE_COMPLEX64;
};
template <>
struct element_type<Kokkos::complex<double>> {
  static constexpr bool supported = true;
  static constexpr weave_dtype_t value = WEAVE_COMPLEX128;
};
// 16-bit types exist on the CUDA backend only; in host-only Kokkos builds
// half_t may be float itself.
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOS_HALF_T_IS_FLOAT) && !KOKKOS_HALF_T_IS_FLOAT
template <>
struct element_type<Kokkos::Experimental::half_t> {
  static constexpr bool supported = true;
  static constexpr weave_dtype_t value = WEAVE_FLOAT16;
};
#endif
#if defined(KOKKOS_ENABLE_CUDA) && defined(KOKKOS_BHALF_T_IS_FLOAT) && !KOKKOS_BHALF_T_IS_FLOAT
template <>
struct element_type<Kokkos::Experimental::bhalf_t> {
  static constexpr bool supported = true;
  static constexpr weave_dtype_t value = WEAVE_BFLOAT16;
};
#endif

// Where a memory space's allocations live, as weave_memory_t; `known` is
// false for spaces Weave has no backend for.
template <class MemorySpace>
struct memory_of {
  static constexpr bool known = false;
};
template <>
struct memory_of<Kokkos::HostSpace> {
  static constexpr bool known = true;
  static constexpr weave_memory_t value = WEAVE_MEMORY_HOST;
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct memory_of<Kokkos::CudaHostPinnedSpace> {
  static constexpr bool known = true;
  static constexpr weave_memory_t value = WEAVE_MEMORY_HOST;
};
template <>
struct memory_of<Kokkos::CudaSpace> {
  static constexpr bool known = true;
  static constexpr weave_memory_t value = WEAVE_MEMORY_DEVICE;
};
template <>
struct memory_of<Kokkos::CudaUVMSpace> {
  static constexpr bool known = true;
  static constexpr weave_memory_t value = WEAVE_MEMORY_DEVICE;
};
#endif

template <class ExecutionSpace>
constexpr bool is_cuda() {
#if defined(KOKKOS_ENABLE_CUDA)
  return std::is_same<ExecutionSpace, Kokkos::Cuda>::value;
#else
  return false;
#endif
}

// Host execution spaces (Serial, OpenMP, Threads, HPX) run in host memory.
template <class ExecutionSpace, bool = Kokkos::is_execution_space<ExecutionSpace>::value>
struct host_space : std::false_type {};
template <class ExecutionSpace>
struct host_space<ExecutionSpace, true>
    : std::is_same<typename ExecutionSpace::memory_space, Kokkos::HostSpace> {};

template <class ExecutionSpace>
constexpr bool is_host() {
  return host_space<ExecutionSpace>::value;
}

// Whether weave::execute can run on ExecutionSpace at all.
template <class ExecutionSpace>
constexpr bool usable_execution_space() {
  return Kokkos::is_execution_space<ExecutionSpace>::value && (is_host<ExecutionSpace>() || is_cuda<ExecutionSpace>());
}

template <class ExecutionSpace>
void check_execution_space() {
  static_assert(Kokkos::is_execution_space<ExecutionSpace>::value,
                "weave::execute: the last argument must be a Kokkos execution-space instance");
  static_assert(!Kokkos::is_execution_space<ExecutionSpace>::value || is_host<ExecutionSpace>() ||
                    is_cuda<ExecutionSpace>(),
                "weave::execute: Weave runs on host execution spaces (Serial, OpenMP, Threads) and on Kokkos::Cuda");
}

// Stands for "no bias View" in the overload without one.
struct NoBias {};

template <class View>
constexpr bool writable() {
  if constexpr (Kokkos::is_view<View>::value)
    return !std::is_const<typename View::value_type>::value;
  else
    return true;  // not a View: check_view says so
}

// Whether View can be a matrix (rank 2) or the bias (rank 1) of a plan:
// the conditions check_view asserts one by one.
template <class View, int Rank>
constexpr bool usable_view() {
  if constexpr (!Kokkos::is_view<View>::value) {
    return false;
  } else {
    constexpr bool layout = Rank == 1 || std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value ||
                            std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value;
    return static_cast<int>(View::rank) == Rank && layout &&
           element_type<typename View::non_const_value_type>::supported &&
           memory_of<typename View::memory_space>::known;
  }
}

// One static_assert per rule, so a wrong argument gets one clear message.
template <class View, int Rank, class ExecutionSpace>
void check_view() {
  static_assert(Kokkos::is_view<View>::value, "weave::execute: A, B, C and bias must be Kokkos::Views");
  if constexpr (Kokkos::is_view<View>::value) {
    static_assert(Rank != 2 || static_cast<int>(View::rank) == 2,
                  "weave::execute: A, B and C must be rank-2 Views (T**)");
    static_assert(Rank != 1 || static_cast<int>(View::rank) == 1, "weave::execute: bias must be a rank-1 View (T*)");
    static_assert(Rank == 1 || std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value ||
                      std::is_same<typename View::array_layout, Kokkos::LayoutRight>::value,
                  "weave::execute: matrix Views must be Kokkos::LayoutLeft (column-major descriptors) or "
                  "Kokkos::LayoutRight (row-major descriptors); copy a strided View into one first");
    static_assert(element_type<typename View::non_const_value_type>::supported,
                  "weave::execute: View element types are float, double, weave::float8_e4m3 or weave::float8_e5m2 "
                  "(half_t and bhalf_t with Kokkos::Cuda)");
    static_assert(memory_of<typename View::memory_space>::known,
                  "weave::execute: Views must live in HostSpace or CudaHostPinnedSpace (host plans), or in "
                  "CudaSpace or CudaUVMSpace (device plans)");
    if constexpr (usable_execution_space<ExecutionSpace>() && memory_of<typename View::memory_space>::known)
      static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename View::memory_space>::accessible,
                    "weave::execute: the execution space cannot access the memory space of a View");
  }
}

inline const char* dtype_name(weave_dtype_t t) {
  switch (t) {
    case WEAVE_FLOAT32: return "float32";
    case WEAVE_FLOAT64: return "float64";
    case WEAVE_FLOAT16: return "float16";
    case WEAVE_BFLOAT16: return "bfloat16";
    case WEAVE_FLOAT8_E4M3: return "float8 e4m3";
    case WEAVE_FLOAT8_E5M2: return "float8 e5m2";
    case WEAVE_COMPLEX64: return "complex64";
    case WEAVE_COMPLEX128: return "complex128";
  }
  return "?";
}

// What the plan expects of one operand, captured from its descriptor.
struct Operand {
  const char* name = "";
  bool present = false;
  int64_t rows = 0, cols = 0, ld = 1;
  weave_dtype_t dtype = WEAVE_FLOAT64;
  weave_order_t order = WEAVE_ORDER_COLUMN_MAJOR;
  weave_memory_t memory = WEAVE_MEMORY_HOST;
};

// The first mismatch between a View and its operand ("" if none).
struct Mismatch {
  weave_status_t status = WEAVE_SUCCESS;
  std::string message;
  explicit operator bool() const { return status != WEAVE_SUCCESS; }
};

template <class View>
Mismatch common_mismatch(const Operand& expected, const View&) {
  using Value = typename View::non_const_value_type;
  const std::string name = expected.name;
  if (element_type<Value>::value != expected.dtype)
    return {WEAVE_ERROR_UNSUPPORTED_TYPE, name + " is a View of " + dtype_name(element_type<Value>::value) +
                                              " but its descriptor says " + dtype_name(expected.dtype)};
  const weave_memory_t memory = memory_of<typename View::memory_space>::value;
  if (memory != expected.memory)
    return {WEAVE_ERROR_POINTER_KIND, name + " is a View in " + View::memory_space::name() + " (" +
                                          (memory == WEAVE_MEMORY_HOST ? "host" : "device") +
                                          " memory) but its descriptor says " +
                                          (expected.memory == WEAVE_MEMORY_HOST ? "host" : "device") + " memory"};
  return {};
}

template <class View>
Mismatch matrix_mismatch(const Operand& expected, const View& view) {
  if (Mismatch m = common_mismatch(expected, view)) return m;
  const std::string name = expected.name;
  const bool left = std::is_same<typename View::array_layout, Kokkos::LayoutLeft>::value;
  const weave_order_t order = left ? WEAVE_ORDER_COLUMN_MAJOR : WEAVE_ORDER_ROW_MAJOR;
  if (order != expected.order)
    return {WEAVE_ERROR_INVALID_VALUE,
            name + " is a " + (left ? "LayoutLeft" : "LayoutRight") + " View but its descriptor is " +
                (expected.order == WEAVE_ORDER_COLUMN_MAJOR ? "column-major (use LayoutLeft)"
                                                            : "row-major (use LayoutRight)")};
  const int64_t rows = static_cast<int64_t>(view.extent(0)), cols = static_cast<int64_t>(view.extent(1));
  if (rows != expected.rows || cols != expected.cols)
    return {WEAVE_ERROR_SHAPE_MISMATCH, name + " is a " + std::to_string(rows) + " x " + std::to_string(cols) +
                                            " View but this rank's block is " + std::to_string(expected.rows) +
                                            " x " + std::to_string(expected.cols)};
  // The leading dimension matters only where a second column (row) exists.
  const bool strided = left ? (rows > 0 && cols > 1) : (cols > 0 && rows > 1);
  const int64_t ld = static_cast<int64_t>(left ? view.stride(1) : view.stride(0));
  if (strided && ld != expected.ld)
    return {WEAVE_ERROR_INVALID_LEADING_DIMENSION,
            name + "'s View has " + (left ? "stride(1)" : "stride(0)") + " = " + std::to_string(ld) +
                " but its descriptor's leading dimension is " + std::to_string(expected.ld) +
                "; give the descriptor that ld, or pass a subview of an allocation with that many " +
                (left ? "rows" : "columns")};
  return {};
}

template <class View>
Mismatch bias_mismatch(const Operand& expected, const View& view) {
  if (!expected.present)
    return {WEAVE_ERROR_INVALID_VALUE, "a bias View was given but the plan was created without a bias descriptor"};
  if (Mismatch m = common_mismatch(expected, view)) return m;
  const int64_t count = static_cast<int64_t>(view.extent(0));
  if (count != expected.cols)
    return {WEAVE_ERROR_SHAPE_MISMATCH, "bias is a View of " + std::to_string(count) +
                                            " elements but this rank's block of bias has " +
                                            std::to_string(expected.cols)};
  // Bias is 1 x N: consecutive entries are ld apart when column-major.
  const int64_t step = expected.order == WEAVE_ORDER_COLUMN_MAJOR ? expected.ld : 1;
  if (count > 1 && static_cast<int64_t>(view.stride(0)) != step)
    return {WEAVE_ERROR_INVALID_LEADING_DIMENSION, "bias's View has stride(0) = " + std::to_string(view.stride(0)) +
                                                       " but its descriptor places entries " + std::to_string(step) +
                                                       " apart"};
  return {};
}

// Stands for "no scale Views" in the overloads without them.
struct NoScales {};

// A scale View: rank 1, float (uint8_t for MXFP8's E8M0 bytes), in memory
// the plan's matrices share; its extent is checked by the library.
template <class View>
Mismatch scale_mismatch(const char* name, const View& view, weave_memory_t memory) {
  static_assert(Kokkos::is_view<View>::value && static_cast<int>(View::rank) == 1,
                "weave::scales: scales are rank-1 Kokkos::Views");
  using Value = typename View::non_const_value_type;
  static_assert(std::is_same<Value, float>::value || std::is_same<Value, uint8_t>::value,
                "weave::scales: scales are Views of float (uint8_t for MXFP8)");
  static_assert(memory_of<typename View::memory_space>::known,
                "weave::scales: scale Views live in HostSpace, CudaHostPinnedSpace, CudaSpace or CudaUVMSpace");
  if (memory_of<typename View::memory_space>::value != memory)
    return {WEAVE_ERROR_POINTER_KIND, std::string(name) + " is a View in " + View::memory_space::name() +
                                          " but the plan's matrices live in " +
                                          (memory == WEAVE_MEMORY_HOST ? "host" : "device") + " memory"};
  if (view.extent(0) > 1 && view.stride(0) != 1)
    return {WEAVE_ERROR_INVALID_VALUE, std::string(name) + "'s View is strided; scales are contiguous"};
  return {};
}

// Hands what this rank found wrong (if anything) to the collective call it
// makes next, whose bounded agreement reports it on every rank of the call
// as the library's own argument checks are (weave_report_argument_error).
inline void report(const Mismatch& local) {
  if (local) check(weave_report_argument_error(local.status, local.message.c_str()));
}

// The Kokkos version Weave was built with, from weave_build_features()
// ("...,kokkos-3.4.01,..."), as KOKKOS_VERSION counts it; 0 if absent.
inline int weave_kokkos_version() {
  const std::string features = weave_build_features();
  const std::string key = "kokkos-";
  const std::size_t at = features.find(key);
  if (at == std::string::npos) return 0;
  const char* text = features.c_str() + at + key.size();
  char* end = nullptr;
  const long major = std::strtol(text, &end, 10);
  if (*end != '.') return 0;
  const long minor = std::strtol(end + 1, &end, 10);
  if (*end != '.') return 0;
  const long patch = std::strtol(end + 1, &end, 10);
  return static_cast<int>(major * 10000 + minor * 100 + patch);
}

inline std::string version_text(int v) {
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

}  // namespace kokkos_detail

// The weave_memory_t of a Kokkos memory space, for descriptors of Views:
//   weave::block_rows(m, k, WEAVE_FLOAT64).memory(weave::kokkos_memory<Space::memory_space>())
template <class MemorySpace>
constexpr weave_memory_t kokkos_memory() {
  static_assert(kokkos_detail::memory_of<MemorySpace>::known,
                "weave::kokkos_memory: Weave knows HostSpace, CudaHostPinnedSpace, CudaSpace and CudaUVMSpace");
  return kokkos_detail::memory_of<MemorySpace>::value;
}

// The scales of FP8 A and B for weave::execute (doc/fp8.md): rank-1 Views.
template <class AScaleView, class BScaleView>
struct ScaleViews {
  AScaleView a;
  BScaleView b;
};
template <class AScaleView, class BScaleView>
ScaleViews<AScaleView, BScaleView> scales(const AScaleView& a, const BScaleView& b) {
  return {a, b};
}

// A plan together with the descriptors of its operands, so that Views can be
// checked against what the plan expects. Move-only, like Plan.
class KokkosPlan {
 public:
  // Collective over the grid: creates the descriptors and the plan.
  // `options` carries every plan field except operation, a, b, c and bias,
  // which come from here (zero fields mean automatic, as in weave_plan_desc_t).
  KokkosPlan(const Grid& grid, weave_operation_t operation, MatrixDesc a, MatrixDesc b, MatrixDesc c,
             const weave_plan_desc_t& options = weave_plan_desc_t{})
      : KokkosPlan(grid, operation, std::move(a), std::move(b), std::move(c), nullptr, options) {}
  KokkosPlan(const Grid& grid, weave_operation_t operation, MatrixDesc a, MatrixDesc b, MatrixDesc c, MatrixDesc bias,
             const weave_plan_desc_t& options = weave_plan_desc_t{})
      : KokkosPlan(grid, operation, std::move(a), std::move(b), std::move(c), &bias, options) {}

  const Plan& plan() const { return *plan_; }
  // The descriptors: local shapes, offsets and leading dimensions to size
  // and fill the Views with.
  const Matrix& a() const { return *a_; }
  const Matrix& b() const { return *b_; }
  const Matrix& c() const { return *c_; }
  // Throws WEAVE_ERROR_INVALID_VALUE if the plan has no bias.
  const Matrix& bias() const {
    if (!bias_) throw Error(WEAVE_ERROR_INVALID_VALUE, "the plan was created without a bias descriptor");
    return *bias_;
  }
  std::string describe() const { return plan_->describe(); }
  weave_plan_info_t info() const { return plan_->info(); }

  // Collective over the operation's group; see execute() below.
  template <class AView, class BView, class CView, class ExecutionSpace>
  void execute(double alpha, const AView& a, const BView& b, double beta, const CView& c,
               const ExecutionSpace& space) const {
    run(alpha, a, b, beta, c, static_cast<const kokkos_detail::NoBias*>(nullptr),
        static_cast<const kokkos_detail::NoScales*>(nullptr), space);
  }
  template <class AView, class BView, class CView, class BiasView, class ExecutionSpace,
            class = std::enable_if_t<Kokkos::is_view<BiasView>::value>>
  void execute(double alpha, const AView& a, const BView& b, double beta, const CView& c, const BiasView& bias,
               const ExecutionSpace& space) const {
    run(alpha, a, b, beta, c, &bias, static_cast<const kokkos_detail::NoScales*>(nullptr), space);
  }
  // FP8 A and B with their scales (weave::scales(a_scale, b_scale)).
  template <class AView, class BView, class CView, class AS, class BS, class ExecutionSpace>
  void execute(double alpha, const AView& a, const BView& b, double beta, const CView& c,
               const ScaleViews<AS, BS>& scales, const ExecutionSpace& space) const {
    run(alpha, a, b, beta, c, static_cast<const kokkos_detail::NoBias*>(nullptr), &scales, space);
  }
  template <class AView, class BView, class CView, class BiasView, class AS, class BS, class ExecutionSpace>
  void execute(double alpha, const AView& a, const BView& b, double beta, const CView& c, const BiasView& bias,
               const ScaleViews<AS, BS>& scales, const ExecutionSpace& space) const {
    run(alpha, a, b, beta, c, &bias, &scales, space);
  }

 private:
  KokkosPlan(const Grid& grid, weave_operation_t operation, MatrixDesc a, MatrixDesc b, MatrixDesc c,
             MatrixDesc* bias, const weave_plan_desc_t& options) {
    // The same Kokkos on both sides of the library boundary: Views and
    // execution spaces are passed by layout, not through a stable ABI.
    kokkos_detail::Mismatch version;
    const int built_with = kokkos_detail::weave_kokkos_version();
    if (built_with != KOKKOS_VERSION)
      version = {WEAVE_ERROR_UNSUPPORTED,
                 "this program is compiled against Kokkos " + kokkos_detail::version_text(KOKKOS_VERSION) +
                     " but Weave was built with " +
                     (built_with ? "Kokkos " + kokkos_detail::version_text(built_with) : std::string("no Kokkos")) +
                     "; build both against the same Kokkos installation"};
    // Reported by the first matrix's creation below, on every rank.
    kokkos_detail::report(version);

    a_operand_ = capture("A", a);
    b_operand_ = capture("B", b);
    c_operand_ = capture("C", c);
    if (bias) bias_operand_ = capture("bias", *bias);
    a_.emplace(grid, std::move(a));
    b_.emplace(grid, std::move(b));
    c_.emplace(grid, std::move(c));
    if (bias) bias_.emplace(grid, std::move(*bias));
    complete(*a_, a_operand_);
    complete(*b_, b_operand_);
    complete(*c_, c_operand_);
    if (bias) complete(*bias_, bias_operand_);

    PlanDesc desc(operation, *a_, *b_, *c_);
    desc.desc = options;
    desc.desc.operation = operation;
    desc.desc.a = a_->get();
    desc.desc.b = b_->get();
    desc.desc.c = c_->get();
    desc.desc.bias = bias ? bias_->get() : nullptr;
    plan_.emplace(grid, desc);
    skip_agreement_ = (options.flags & WEAVE_FLAG_NO_EXECUTE_CHECK) != 0;
  }

  static kokkos_detail::Operand capture(const char* name, MatrixDesc& d) {
    kokkos_detail::Operand o;
    o.name = name;
    o.present = true;
    o.dtype = d.desc.dtype;
    o.order = d.desc.order;
    o.memory = d.desc.memory;
    return o;
  }
  static void complete(const Matrix& m, kokkos_detail::Operand& o) {
    o.rows = m.local_rows();
    o.cols = m.local_cols();
    o.ld = m.ld();
  }

  template <class AView, class BView, class CView, class BiasView, class Scales, class ExecutionSpace>
  void run(double alpha, const AView& a, const BView& b, double beta, const CView& c, const BiasView* bias,
           const Scales* scales, const ExecutionSpace& space) const {
    kokkos_detail::check_execution_space<ExecutionSpace>();
    kokkos_detail::check_view<AView, 2, ExecutionSpace>();
    kokkos_detail::check_view<BView, 2, ExecutionSpace>();
    kokkos_detail::check_view<CView, 2, ExecutionSpace>();
    constexpr bool has_bias = !std::is_same<BiasView, kokkos_detail::NoBias>::value;
    if constexpr (has_bias) kokkos_detail::check_view<BiasView, 1, ExecutionSpace>();
    constexpr bool c_writable = kokkos_detail::writable<CView>();
    static_assert(c_writable, "weave::execute: C is written; it cannot be a View of const elements");
    if constexpr (kokkos_detail::usable_execution_space<ExecutionSpace>() && kokkos_detail::usable_view<AView, 2>() &&
                  kokkos_detail::usable_view<BView, 2>() && kokkos_detail::usable_view<CView, 2>() &&
                  (!has_bias || kokkos_detail::usable_view<BiasView, 1>()) && c_writable)
      check_and_run(alpha, a, b, beta, c, bias, scales, space);
  }

  // After the compile-time checks passed (they are the only errors then).
  template <class AView, class BView, class CView, class BiasView, class Scales, class ExecutionSpace>
  void check_and_run(double alpha, const AView& a, const BView& b, double beta, const CView& c, const BiasView* bias,
                     const Scales* scales, const ExecutionSpace& space) const {
    constexpr bool has_scales = !std::is_same<Scales, kokkos_detail::NoScales>::value;
    constexpr bool has_bias = !std::is_same<BiasView, kokkos_detail::NoBias>::value;
    kokkos_detail::Mismatch mismatch = kokkos_detail::matrix_mismatch(a_operand_, a);
    if (!mismatch) mismatch = kokkos_detail::matrix_mismatch(b_operand_, b);
    if (!mismatch) mismatch = kokkos_detail::matrix_mismatch(c_operand_, c);
    if constexpr (has_bias) {
      if (!mismatch) mismatch = kokkos_detail::bias_mismatch(bias_operand_, *bias);
    } else if (!mismatch && bias_operand_.present) {
      mismatch = {WEAVE_ERROR_NULL_ARGUMENT, "the plan has a bias; pass a bias View"};
    }
    const bool device = c_operand_.memory == WEAVE_MEMORY_DEVICE;
    if constexpr (has_scales) {
      if (!mismatch) mismatch = kokkos_detail::scale_mismatch("the scales of A", scales->a, c_operand_.memory);
      if (!mismatch) mismatch = kokkos_detail::scale_mismatch("the scales of B", scales->b, c_operand_.memory);
    }
    if (!mismatch && device && !kokkos_detail::is_cuda<ExecutionSpace>())
      mismatch = {WEAVE_ERROR_INVALID_VALUE, std::string("the plan's matrices live in device memory; pass a "
                                                         "Kokkos::Cuda instance, not ") + ExecutionSpace::name()};
    if (skip_agreement_) {
      if (mismatch) throw Error(mismatch.status, mismatch.message);
    } else {
      // The execute below fails on every rank of the group, within the
      // plan's timeout, with the lowest failing rank's mismatch.
      kokkos_detail::report(mismatch);
    }

    void* stream = nullptr;
    if (device) {
#if defined(KOKKOS_ENABLE_CUDA)
      if constexpr (kokkos_detail::is_cuda<ExecutionSpace>()) stream = space.cuda_stream();
#endif
    } else {
      space.fence();  // what the instance was asked to do before, e.g. fill A and B
    }
    weave_execute_args_t args = WEAVE_EXECUTE_ARGS_INIT;
    args.alpha = alpha;
    args.beta = beta;
    args.a = a.data();
    args.b = b.data();
    args.c = c.data();
    args.stream = stream;
    if constexpr (has_bias) args.bias = bias->data();
    if constexpr (has_scales) {
      // Their sizes are the library's to check, on every rank.
      args.a_scale = scales->a.data();
      args.b_scale = scales->b.data();
      args.buffer_checks = WEAVE_CHECK_ELEMENTS;
      args.a_elements = static_cast<int64_t>(a.span());
      args.b_elements = static_cast<int64_t>(b.span());
      args.c_elements = static_cast<int64_t>(c.span());
      if constexpr (has_bias) args.bias_elements = static_cast<int64_t>(bias->span());
      args.a_scale_elements = static_cast<int64_t>(scales->a.extent(0));
      args.b_scale_elements = static_cast<int64_t>(scales->b.extent(0));
    }
    check(weave_execute_ex(plan_->get(), &args));
  }

  std::optional<Matrix> a_, b_, c_, bias_;
  kokkos_detail::Operand a_operand_, b_operand_, c_operand_, bias_operand_;
  std::optional<Plan> plan_;
  bool skip_agreement_ = false;
};

// C <- alpha * product + beta * C, the work ordered on `space` (see the top
// of this file). Collective over the operation's group.
template <class AView, class BView, class CView, class ExecutionSpace>
void execute(const KokkosPlan& plan, double alpha, const AView& a, const BView& b, double beta, const CView& c,
             const ExecutionSpace& space) {
  plan.execute(alpha, a, b, beta, c, space);
}

// C <- alpha * product + beta * C + bias.
template <class AView, class BView, class CView, class BiasView, class ExecutionSpace,
          class = std::enable_if_t<Kokkos::is_view<BiasView>::value>>
void execute(const KokkosPlan& plan, double alpha, const AView& a, const BView& b, double beta, const CView& c,
             const BiasView& bias, const ExecutionSpace& space) {
  plan.execute(alpha, a, b, beta, c, bias, space);
}

// FP8 A and B with their scales: weave::scales(a_scale, b_scale).
template <class AView, class BView, class CView, class AS, class BS, class ExecutionSpace>
void execute(const KokkosPlan& plan, double alpha, const AView& a, const BView& b, double beta, const CView& c,
             const ScaleViews<AS, BS>& scales, const ExecutionSpace& space) {
  plan.execute(alpha, a, b, beta, c, scales, space);
}
template <class AView, class BView, class CView, class BiasView, class AS, class BS, class ExecutionSpace>
void execute(const KokkosPlan& plan, double alpha, const AView& a, const BView& b, double beta, const CView& c,
             const BiasView& bias, const ScaleViews<AS, BS>& scales, const ExecutionSpace& space) {
  plan.execute(alpha, a, b, beta, c, bias, scales, space);
}

}  // namespace weave

#endif  // WEAVE_WEAVE_KOKKOS_HPP
