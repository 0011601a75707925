#include "backends/host/host_backend.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <new>

#include "backends/host/blas.hpp"
#include "backends/host/kokkos_runtime.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "kernels/copy.hpp"
#include "kernels/copy_geometry.hpp"
#include "kernels/copy_words.hpp"
#include "kernels/dequantize.hpp"
#include "kernels/epilogue.hpp"
#include "kernels/gemm_layout.hpp"
#include "kernels/quantize.hpp"
#include "kernels/rearrange.hpp"

namespace weave::internal::host {

namespace {
constexpr std::size_t kWorkspaceAlignment = 256;

// Weave's element types as the host stores them, for the kernels
// instantiated per type: visit(Tag<T>{}) with T the type of `type`.
template <class T>
struct Tag {
  using type = T;
};
template <class Visit>
bool visit_host_type(DType type, Visit&& visit) {
  switch (type) {
    case DType::F64: visit(Tag<double>{}); return true;
    case DType::F32: visit(Tag<float>{}); return true;
    case DType::F16: visit(Tag<kernels::Float16Bits>{}); return true;
    case DType::BF16: visit(Tag<kernels::BFloat16Bits>{}); return true;
    case DType::E4M3: visit(Tag<kernels::Float8E4M3>{}); return true;
    case DType::E5M2: visit(Tag<kernels::Float8E5M2>{}); return true;
    case DType::UE8M0:
    case DType::C64:
    case DType::C128: return false;
  }
  return false;
}

// Runs a functor with size() and operator()(int64_t) on the host execution space.
template <class Functor>
void run_on_host(const char* name, const Functor& f) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  Space space;
  Kokkos::parallel_for(name, Kokkos::RangePolicy<Space, Kokkos::IndexType<int64_t>>(space, 0, f.size()), f);
  space.fence();
}

blas_int to_blas_int(int64_t value, const char* what) {
  if (value > static_cast<int64_t>(std::numeric_limits<blas_int>::max()))
    fail(WEAVE_ERROR_UNSUPPORTED, what, " = ", value,
         " exceeds the BLAS integer range; configure with WEAVE_BLAS_ILP64=ON and a 64-bit-integer BLAS");
  return static_cast<blas_int>(value);
}

char blas_op(Op op) { return op == Op::N ? 'N' : op == Op::T ? 'T' : 'C'; }

// A column-major operand's leading dimension as BLAS gets it: a matrix of
// one column never steps by it, so it gets the smallest valid one (the
// caller's may be any size, beyond BLAS's integers too).
int64_t leading_dimension(int64_t ld, int64_t rows, int64_t cols) { return cols <= 1 ? std::max<int64_t>(1, rows) : ld; }

// The integer arguments of one BLAS GEMM; fails (before anything runs
// where the plan checks them at creation) where one does not fit BLAS's
// integers.
struct BlasArguments {
  blas_int m = 0, n = 0, k = 0, lda = 1, ldb = 1, ldc = 1;
};

BlasArguments blas_arguments(const kernels::ColumnMajorGemm& g) {
  const bool left_n = g.op_left == Op::N, right_n = g.op_right == Op::N;
  BlasArguments b;
  b.m = to_blas_int(g.m, "m");
  b.n = to_blas_int(g.n, "n");
  b.k = to_blas_int(g.k, "k");
  b.lda = to_blas_int(leading_dimension(g.ld_left, left_n ? g.m : g.k, left_n ? g.k : g.m), "lda");
  b.ldb = to_blas_int(leading_dimension(g.ld_right, right_n ? g.k : g.n, right_n ? g.n : g.k), "ldb");
  b.ldc = to_blas_int(leading_dimension(g.ld_out, g.m, g.n), "ldc");
  return b;
}

// One BLAS GEMM in real type R, on real (components 1) or complex
// (components 2: cgemm, zgemm) elements; alpha and beta as (real, imaginary).
template <class R, int components>
void call_gemm(const kernels::ColumnMajorGemm& g, exec::ScalarValue alpha, exec::ScalarValue beta) {
  const char ta = blas_op(g.op_left), tb = blas_op(g.op_right);
  const BlasArguments x = blas_arguments(g);
  const R* a = static_cast<const R*>(g.left);
  const R* b = static_cast<const R*>(g.right);
  R* c = static_cast<R*>(g.out);
  const R alpha_v[2] = {static_cast<R>(alpha.re), static_cast<R>(alpha.im)};
  const R beta_v[2] = {static_cast<R>(beta.re), static_cast<R>(beta.im)};
  if constexpr (std::is_same_v<R, float> && components == 1)
    sgemm_(&ta, &tb, &x.m, &x.n, &x.k, alpha_v, a, &x.lda, b, &x.ldb, beta_v, c, &x.ldc, 1, 1);
  else if constexpr (std::is_same_v<R, double> && components == 1)
    dgemm_(&ta, &tb, &x.m, &x.n, &x.k, alpha_v, a, &x.lda, b, &x.ldb, beta_v, c, &x.ldc, 1, 1);
  else if constexpr (std::is_same_v<R, float>)
    cgemm_(&ta, &tb, &x.m, &x.n, &x.k, alpha_v, a, &x.lda, b, &x.ldb, beta_v, c, &x.ldc, 1, 1);
  else
    zgemm_(&ta, &tb, &x.m, &x.n, &x.k, alpha_v, a, &x.lda, b, &x.ldb, beta_v, c, &x.ldc, 1, 1);
}

// C = alpha op(A) op(B) + beta C in BLAS (A, B and C all f32, f64, c64 or
// c128). Tiles of C when someone wants to be called between them: column
// tiles (of C and op(B)), or row tiles (of C and op(A)) where C is taller
// than wide, so that a tall, narrow product is called back as often. Tiles
// of tile_flops while transfers are in flight; once a call says none is
// left (or from the start, when the calls only send arrival notices), the
// rest of C in tiles idle_tile_factor times larger; never narrower than
// min_tile.
void blas_gemm(const exec::MatrixRef& a, Op op_a, const exec::MatrixRef& b, Op op_b, const exec::MatrixRef& c,
               exec::ScalarValue alpha, exec::ScalarValue beta, const HostBackendOptions& options,
               const exec::ProgressHook& progress) {
  const int64_t k = op_a == Op::N ? a.cols : a.rows;
  const bool row_tiles = c.rows > c.cols;
  const int64_t extent = row_tiles ? c.rows : c.cols;
  const double flops_per_line = 2.0 * static_cast<double>(row_tiles ? c.cols : c.rows) * static_cast<double>(k);
  auto tile_extent = [&](bool in_flight) {
    if (!progress) return extent;
    const double flops = options.tile_flops * (in_flight ? 1.0 : options.idle_tile_factor);
    const double lines = flops_per_line > 0 ? flops / flops_per_line : static_cast<double>(extent);
    const int64_t wanted = lines >= static_cast<double>(extent) ? extent : static_cast<int64_t>(lines);
    return std::clamp<int64_t>(wanted, std::min(options.min_tile, extent), extent);
  };
  bool in_flight = progress && progress.transfers_in_flight;
  for (int64_t first = 0; first < extent;) {
    const int64_t count = std::min(tile_extent(in_flight), extent - first);
    const exec::MatrixRef c_tile =
        row_tiles ? kernels::op_rows(c, Op::N, first, count) : kernels::op_columns(c, Op::N, first, count);
    const exec::MatrixRef a_tile = row_tiles ? kernels::op_rows(a, op_a, first, count) : a;
    const exec::MatrixRef b_tile = row_tiles ? b : kernels::op_columns(b, op_b, first, count);
    const kernels::ColumnMajorGemm g = kernels::to_column_major(a_tile, op_a, b_tile, op_b, c_tile);
    switch (c.dtype) {
      case DType::F32: call_gemm<float, 1>(g, alpha, beta); break;
      case DType::F64: call_gemm<double, 1>(g, alpha, beta); break;
      case DType::C64: call_gemm<float, 2>(g, alpha, beta); break;
      case DType::C128: call_gemm<double, 2>(g, alpha, beta); break;
      default:
        fail(WEAVE_ERROR_INTERNAL, "BLAS multiplies f32, f64, c64 and c128, not ", dtype_name(c.dtype));
    }
    first += count;
    if (progress && first < extent) in_flight = progress();
  }
}

// Further sources, resolved without allocating (execute allocates nothing).
struct MoreSources {
  std::array<const void*, kernels::kMaxMoreSources> data{};
  int count = 0;
};

template <class Dst, class Src>
void launch_epilogue(const exec::MatrixRef& dst, const exec::MatrixRef* src, const MoreSources& more,
                     const exec::MatrixRef* bias, exec::ScalarValue src_scale, exec::ScalarValue dst_scale,
                     bool conjugate_src = false) {
  kernels::EpilogueFunctor<Dst, Src> f;
  f.more_count = more.count;
  for (int q = 0; q < more.count; ++q) f.more[q] = static_cast<const Src*>(more.data[static_cast<std::size_t>(q)]);
  f.dst = static_cast<Dst*>(dst.data);
  f.dst_ld = dst.ld;
  f.dst_row_major = dst.order == Order::RowMajor;
  if (src) {
    f.src = static_cast<const Src*>(src->data);
    f.src_ld = src->ld;
    f.src_row_major = src->order == Order::RowMajor;
  }
  if (bias) {
    f.bias = static_cast<const Dst*>(bias->data);
    f.bias_stride = bias->column_stride();
  }
  using Acc = typename decltype(f)::Acc;
  f.src_scale = kernels::ScalarOf<Acc>::make(src_scale.re, src_scale.im);
  f.dst_scale = kernels::ScalarOf<Acc>::make(dst_scale.re, dst_scale.im);
  f.conjugate_src = conjugate_src;
  f.rows = dst.rows;
  f.cols = dst.cols;
  run_on_host("weave::internal::epilogue", f);
}

constexpr exec::ScalarValue kOne{1.0, 0.0}, kZero{0.0, 0.0};

// The (dst, src) type pairs of the arithmetic element-wise steps: a type
// with itself, and float32 with float64 and with the 16-bit types either
// way (FP8 values are only ever copied, decoded or quantized; complex values
// only meet their own type).
template <class Visit>
bool visit_epilogue_pair(DType dst, DType src, Visit&& visit) {
  using kernels::BFloat16Bits;
  using kernels::Float16Bits;
  if (dst == src) {
    switch (dst) {
      case DType::F64: visit(Tag<double>{}, Tag<double>{}); return true;
      case DType::F32: visit(Tag<float>{}, Tag<float>{}); return true;
      case DType::F16: visit(Tag<Float16Bits>{}, Tag<Float16Bits>{}); return true;
      case DType::BF16: visit(Tag<BFloat16Bits>{}, Tag<BFloat16Bits>{}); return true;
      case DType::C64: visit(Tag<kernels::Complex<float>>{}, Tag<kernels::Complex<float>>{}); return true;
      case DType::C128: visit(Tag<kernels::Complex<double>>{}, Tag<kernels::Complex<double>>{}); return true;
      default: return false;
    }
  }
  if (dst == DType::F32) {
    switch (src) {
      case DType::F64: visit(Tag<float>{}, Tag<double>{}); return true;
      case DType::F16: visit(Tag<float>{}, Tag<Float16Bits>{}); return true;
      case DType::BF16: visit(Tag<float>{}, Tag<BFloat16Bits>{}); return true;
      default: return false;
    }
  }
  if (src == DType::F32) {
    switch (dst) {
      case DType::F64: visit(Tag<double>{}, Tag<float>{}); return true;
      case DType::F16: visit(Tag<Float16Bits>{}, Tag<float>{}); return true;
      case DType::BF16: visit(Tag<BFloat16Bits>{}, Tag<float>{}); return true;
      default: return false;
    }
  }
  return false;
}

// dst = src, bits unchanged, for elements of any size, in the widest words
// the layouts allow (kernels/copy_words.hpp: the CUDA backend's copies are
// cut the same way, so every host test of a schedule's copies checks it).
void copy_bits(const exec::MatrixRef& dst, const exec::MatrixRef& src) {
  const kernels::WordCopy w = kernels::widest_word_copy(kernels::copy_geometry(dst, src));
  const bool known = kernels::visit_word(w.word_bytes, [&](auto word) {
    run_on_host("weave::internal::copy", kernels::word_copy_functor<decltype(word)>(w, dst.data, src.data));
  });
  if (!known) fail(WEAVE_ERROR_INTERNAL, "no copy for ", w.word_bytes, "-byte words");
}

// op(X) (rows x cols) into `out` (float32, column-major, ld rows), with its
// scales applied.
void dequantize(const exec::MatrixRef& x, Op op, int64_t rows, int64_t cols, const plan::ScaleOperand& scales,
                const exec::Bindings& bindings, bool outer_is_row, float* out) {
  if (rows == 0 || cols == 0) return;
  exec::MatrixRef scale_ref;
  if (scales.scaled()) scale_ref = bindings.resolve(scales.region);
  const bool known = visit_host_type(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernels::DequantizeFunctor<T> f;
    f.dst = out;
    f.dst_ld = rows;
    f.src = static_cast<const T*>(x.data);
    f.src_ld = x.ld;
    f.src_row_major = x.order == Order::RowMajor;
    f.transposed = op == Op::T;
    f.rows = rows;
    f.cols = cols;
    f.scale_mode = scales.mode;
    f.scales = scale_ref.data;
    f.scale_ld = scale_ref.ld;
    f.scales_e8m0 = scale_ref.dtype == DType::UE8M0;
    f.outer_is_row = outer_is_row;
    run_on_host("weave::internal::dequantize", f);
  });
  if (!known) fail(WEAVE_ERROR_INTERNAL, "the host backend cannot decode ", dtype_name(x.dtype));
}

using exec::layout_of;

exec::MatrixRef float_matrix(float* data, int64_t rows, int64_t cols) {
  exec::MatrixRef m;
  m.data = data;
  m.rows = rows;
  m.cols = cols;
  m.ld = std::max<int64_t>(1, rows);
  m.dtype = DType::F32;
  m.order = Order::ColMajor;
  return m;
}

}  // namespace

bool HostBackend::native(const plan::Schedule& schedule, const plan::GemmOp& op) {
  const DType a = schedule.buffer(op.a).dtype, b = schedule.buffer(op.b).dtype, c = schedule.buffer(op.c).dtype;
  return !op.a_scale.scaled() && !op.b_scale.scaled() && a == b && a == c &&
         (c == DType::F32 || c == DType::F64 || c == DType::C64 || c == DType::C128);
}

HostBackend::HostBackend(const plan::Schedule& schedule, HostBackendOptions options) : options_(options) {
  ensure_kokkos_initialized();
  // Every GEMM's sizes and leading dimensions fit BLAS's integers (tiles
  // are only smaller), checked here so that a plan that cannot run is
  // refused when it is created, not halfway through an execute. And the
  // emulated GEMMs' float32 scratch: the largest decoded A, B and (for a C
  // that is not float32) C of any of them.
  int64_t scratch_floats = 0;
  for (const plan::Step& step : schedule.steps) {
    const auto* op = std::get_if<plan::GemmOp>(&step.op);
    if (!op) continue;
    const exec::MatrixRef c = layout_of(schedule, op->c);
    const int64_t gemm_k = op->op_a == Op::N ? op->a.cols : op->a.rows;
    const bool native_gemm = native(schedule, *op);
    if (native_gemm)
      blas_arguments(kernels::to_column_major(layout_of(schedule, op->a), op->op_a, layout_of(schedule, op->b),
                                              op->op_b, c));
    else  // into C itself (float32), else into a float32 copy of it
      blas_arguments(kernels::to_column_major(
          float_matrix(nullptr, c.rows, gemm_k), Op::N, float_matrix(nullptr, gemm_k, c.cols), Op::N,
          schedule.buffer(op->c).dtype == DType::F32 ? c : float_matrix(nullptr, c.rows, c.cols)));
    if (native_gemm) continue;
    for (const plan::Region* r : {&op->a, &op->b})
      if (dtype_row(schedule.buffer(*r).dtype).host == Support::No)
        fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend cannot multiply ", dtype_name(schedule.buffer(*r).dtype));
    const int64_t m = op->c.rows, n = op->c.cols, k = op->op_a == Op::N ? op->a.cols : op->a.rows;
    int64_t floats = checked_add(checked_mul(m, k, "the emulated GEMM scratch"), checked_mul(k, n, "the emulated GEMM scratch"),
                                 "the emulated GEMM scratch");
    if (schedule.buffer(op->c).dtype != DType::F32)
      floats = checked_add(floats, checked_mul(m, n, "the emulated GEMM scratch"), "the emulated GEMM scratch");
    scratch_floats = std::max(scratch_floats, floats);
    emulates_ = true;
  }
  const std::size_t scratch_bytes =
      static_cast<std::size_t>(checked_mul(scratch_floats, int64_t{4}, "the bytes of the emulated GEMM scratch"));
  const std::size_t workspace_bytes = static_cast<std::size_t>(schedule.workspace_bytes);
  // The nothrow form: a workspace too large for this machine is a status
  // (also under AddressSanitizer, whose throwing operator new aborts).
  if (workspace_bytes > 0) {
    workspace_ = ::operator new(workspace_bytes, std::align_val_t(kWorkspaceAlignment), std::nothrow);
    if (!workspace_) fail(WEAVE_ERROR_OUT_OF_MEMORY, "cannot allocate ", workspace_bytes, " bytes of host workspace");
  }
  if (scratch_bytes > 0) {
    scratch_ = static_cast<float*>(::operator new(scratch_bytes, std::align_val_t(kWorkspaceAlignment), std::nothrow));
    if (!scratch_) {
      ::operator delete(workspace_, std::align_val_t(kWorkspaceAlignment));
      workspace_ = nullptr;
      fail(WEAVE_ERROR_OUT_OF_MEMORY, "cannot allocate ", scratch_bytes,
           " bytes of float32 scratch for the host backend's emulated GEMMs");
    }
  }
}

HostBackend::~HostBackend() {
  if (workspace_) ::operator delete(workspace_, std::align_val_t(kWorkspaceAlignment));
  if (scratch_) ::operator delete(scratch_, std::align_val_t(kWorkspaceAlignment));
}

std::string HostBackend::name() const {
  return "host (BLAS" + std::string(emulates_ ? ", emulated types decoded to float32" : "") + ", " +
         kokkos_description() + ")";
}

void HostBackend::gemm(const plan::GemmOp& op, int lane, const exec::Bindings& bindings, const exec::Scalars& scalars,
                       const exec::ProgressHook& progress) {
  if (op.has_addend) {
    // c = beta * c + addend (c not read when beta is zero), rounded into c's
    // type as the CUDA backend rounds it into the addend, then the product
    // added onto it.
    plan::EpilogueOp before;
    before.dst = op.c;
    before.has_src = true;
    before.src = op.addend;
    before.dst_scale = op.beta;
    epilogue(before, lane, bindings, scalars);
    plan::GemmOp rest = op;
    rest.has_addend = false;
    rest.beta = plan::Scalar::One;
    gemm(rest, lane, bindings, scalars, progress);
    return;
  }
  if (!native(*bindings.schedule, op)) {
    emulated_gemm(op, bindings, scalars, progress);
    return;
  }
  const exec::MatrixRef a = bindings.resolve(op.a), b = bindings.resolve(op.b), c = bindings.resolve(op.c);
  if (c.rows == 0 || c.cols == 0) return;
  blas_gemm(a, op.op_a, b, op.op_b, c, scalars.complex_value(op.alpha), scalars.complex_value(op.beta), options_,
            progress);
}

void HostBackend::emulated_gemm(const plan::GemmOp& op, const exec::Bindings& bindings, const exec::Scalars& scalars,
                                const exec::ProgressHook& progress) {
  const exec::MatrixRef a = bindings.resolve(op.a), b = bindings.resolve(op.b), c = bindings.resolve(op.c);
  if (c.rows == 0 || c.cols == 0) return;
  const int64_t m = c.rows, n = c.cols, k = op.op_a == Op::N ? a.cols : a.rows;
  const exec::MatrixRef a_hat = float_matrix(scratch_, m, k);
  const exec::MatrixRef b_hat = float_matrix(scratch_ + m * k, k, n);
  dequantize(a, op.op_a, m, k, op.a_scale, bindings, true, scratch_);
  dequantize(b, op.op_b, k, n, op.b_scale, bindings, false, scratch_ + m * k);
  // Emulated types are real: alpha and beta have no imaginary part.
  const exec::ScalarValue alpha{scalars.value(op.alpha), 0.0}, beta{scalars.value(op.beta), 0.0};
  if (c.dtype == DType::F32) {
    blas_gemm(a_hat, Op::N, b_hat, Op::N, c, alpha, beta, options_, progress);
    return;
  }
  // Another C: the product in float32, C rounded from it once.
  const exec::MatrixRef c_hat = float_matrix(scratch_ + m * k + k * n, m, n);
  const MoreSources none;
  const bool known = visit_epilogue_pair(c.dtype, DType::F32, [&](auto d, auto s) {
    using C = typename decltype(d)::type;
    using F = typename decltype(s)::type;
    if (beta.re != 0.0) launch_epilogue<F, C>(c_hat, &c, none, nullptr, kOne, kZero);  // C is not read when beta == 0
    blas_gemm(a_hat, Op::N, b_hat, Op::N, c_hat, alpha, beta, options_, progress);
    launch_epilogue<C, F>(c, &c_hat, none, nullptr, kOne, kZero);
  });
  if (!known) fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend cannot store a product as ", dtype_name(c.dtype));
}

void HostBackend::epilogue(const plan::EpilogueOp& op, int, const exec::Bindings& bindings,
                           const exec::Scalars& scalars) {
  const exec::MatrixRef dst = bindings.resolve(op.dst);
  if (dst.rows == 0 || dst.cols == 0) return;
  exec::MatrixRef src, bias;
  if (op.has_src) src = bindings.resolve(op.src);
  if (op.plain_copy() && src.dtype == dst.dtype) {
    copy_bits(dst, src);
    return;
  }
  if (op.has_bias) bias = bindings.resolve(op.bias);
  const exec::MatrixRef* src_ptr = op.has_src ? &src : nullptr;
  MoreSources more;
  for (const plan::Region& r : op.more_src)
    more.data.at(static_cast<std::size_t>(more.count++)) = bindings.resolve(r).data;
  const exec::MatrixRef* bias_ptr = op.has_bias ? &bias : nullptr;
  const exec::ScalarValue src_scale = scalars.complex_value(op.src_scale),
                          dst_scale = scalars.complex_value(op.dst_scale);
  const DType src_type = op.has_src ? src.dtype : dst.dtype;
  const bool known = visit_epilogue_pair(dst.dtype, src_type, [&](auto d, auto s) {
    launch_epilogue<typename decltype(d)::type, typename decltype(s)::type>(dst, src_ptr, more, bias_ptr, src_scale,
                                                                            dst_scale, op.conjugate_src);
  });
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend has no element-wise kernel writing ", dtype_name(dst.dtype),
         " from ", dtype_name(src_type));
}

void HostBackend::quantize(const plan::QuantizeOp& op, int, const exec::Bindings& bindings) {
  const exec::MatrixRef src = bindings.resolve(op.src), dst = bindings.resolve(op.dst);
  const int64_t rows = op.op == Op::N ? src.rows : src.cols, cols = op.op == Op::N ? src.cols : src.rows;
  if (rows == 0) return;
  exec::MatrixRef scales;
  if (op.has_scales) scales = bindings.resolve(op.scales);
  // The sources a wire type takes (f32, f16, bf16) into e4m3 or bf16.
  auto run = [&](auto src_tag, auto dst_tag) {
    using Src = typename decltype(src_tag)::type;
    using Dst = typename decltype(dst_tag)::type;
    kernels::QuantizeRowsFunctor<Src, Dst> f;
    f.src = static_cast<const Src*>(src.data);
    f.src_ld = src.ld;
    f.src_row_major = src.order == Order::RowMajor;
    f.dst = static_cast<Dst*>(dst.data);
    f.dst_ld = dst.ld;
    f.dst_row_major = dst.order == Order::RowMajor;
    f.transposed = op.op == Op::T;
    f.scales = op.has_scales ? static_cast<float*>(scales.data) : nullptr;
    f.max_finite = static_cast<float>(dtype_row(dst.dtype).max_finite);
    f.rows = rows;
    f.cols = cols;
    run_on_host("weave::internal::quantize", f);
  };
  auto with_source = [&](auto dst_tag) {
    switch (src.dtype) {
      case DType::F32: run(Tag<float>{}, dst_tag); return true;
      case DType::F16: run(Tag<kernels::Float16Bits>{}, dst_tag); return true;
      case DType::BF16: run(Tag<kernels::BFloat16Bits>{}, dst_tag); return true;
      default: return false;
    }
  };
  const bool known = dst.dtype == DType::E4M3   ? with_source(Tag<kernels::Float8E4M3>{})
                     : dst.dtype == DType::BF16 ? with_source(Tag<kernels::BFloat16Bits>{})
                                                : false;
  if (!known)
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend cannot quantize ", dtype_name(src.dtype), " into ",
         dtype_name(dst.dtype));
}

void HostBackend::rearrange(const plan::RearrangeOp& op, int, const exec::Bindings& bindings) {
  const MoreSources none;
  const bool conjugate = op.src_op == Op::C;
  kernels::for_each_rectangle(op, bindings, [&](const exec::MatrixRef& dst, const exec::MatrixRef& src) {
    if (dst.dtype != src.dtype) fail(WEAVE_ERROR_INTERNAL, "a rearrangement converts between element types");
    if (!conjugate && src.order == dst.order) {  // the bits as they are, for every type (FP8 too)
      copy_bits(dst, src);
      return;
    }
    if (!visit_epilogue_pair(dst.dtype, dst.dtype, [&](auto d, auto s) {
          launch_epilogue<typename decltype(d)::type, typename decltype(s)::type>(dst, &src, none, nullptr, kOne,
                                                                                  kZero, conjugate);
        }))
      copy_bits(dst, src);  // no arithmetic type (FP8): a transposing copy of the bits
  });
}

}  // namespace weave::internal::host
