#include "backends/host/host_backend.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <new>

#include "backends/host/blas.hpp"
#include "backends/host/kokkos_runtime.hpp"
#include "core/error.hpp"
#include "kernels/epilogue.hpp"
#include "kernels/gemm_layout.hpp"
#include "kernels/rearrange.hpp"

namespace weave::internal::host {

namespace {
constexpr std::size_t kWorkspaceAlignment = 256;

blas_int to_blas_int(int64_t value, const char* what) {
  if (value > static_cast<int64_t>(std::numeric_limits<blas_int>::max()))
    fail(WEAVE_ERROR_UNSUPPORTED, what, " = ", value,
         " exceeds the BLAS integer range; configure with WEAVE_BLAS_ILP64=ON and a 64-bit-integer BLAS");
  return static_cast<blas_int>(value);
}

char blas_op(Op op) { return op == Op::N ? 'N' : op == Op::T ? 'T' : 'C'; }

// One BLAS GEMM in real type R, on real (components 1) or complex
// (components 2: cgemm, zgemm) elements; alpha and beta as (real, imaginary).
template <class R, int components>
void call_gemm(const kernels::ColumnMajorGemm& g, exec::ScalarValue alpha, exec::ScalarValue beta) {
  const char ta = blas_op(g.op_left), tb = blas_op(g.op_right);
  const blas_int m = to_blas_int(g.m, "m"), n = to_blas_int(g.n, "n"), k = to_blas_int(g.k, "k");
  const blas_int lda = to_blas_int(g.ld_left, "lda"), ldb = to_blas_int(g.ld_right, "ldb"),
                 ldc = to_blas_int(g.ld_out, "ldc");
  const R* a = static_cast<const R*>(g.left);
  const R* b = static_cast<const R*>(g.right);
  R* c = static_cast<R*>(g.out);
  const R alpha_v[2] = {static_cast<R>(alpha.re), static_cast<R>(alpha.im)};
  const R beta_v[2] = {static_cast<R>(beta.re), static_cast<R>(beta.im)};
  if constexpr (std::is_same_v<R, float> && components == 1)
    sgemm_(&ta, &tb, &m, &n, &k, alpha_v, a, &lda, b, &ldb, beta_v, c, &ldc, 1, 1);
  else if constexpr (std::is_same_v<R, double> && components == 1)
    dgemm_(&ta, &tb, &m, &n, &k, alpha_v, a, &lda, b, &ldb, beta_v, c, &ldc, 1, 1);
  else if constexpr (std::is_same_v<R, float>)
    cgemm_(&ta, &tb, &m, &n, &k, alpha_v, a, &lda, b, &ldb, beta_v, c, &ldc, 1, 1);
  else
    zgemm_(&ta, &tb, &m, &n, &k, alpha_v, a, &lda, b, &ldb, beta_v, c, &ldc, 1, 1);
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
  using Space = Kokkos::DefaultHostExecutionSpace;
  Space space;
  Kokkos::parallel_for("weave::internal::epilogue", Kokkos::RangePolicy<Space, Kokkos::IndexType<int64_t>>(space, 0, f.size()),
                       f);
  space.fence();
}

}  // namespace

HostBackend::HostBackend(std::size_t workspace_bytes, HostBackendOptions options) : options_(options) {
  ensure_kokkos_initialized();
  if (workspace_bytes > 0) {
    // The nothrow form: a workspace too large for this machine is a status
    // (also under AddressSanitizer, whose throwing operator new aborts).
    workspace_ = ::operator new(workspace_bytes, std::align_val_t(kWorkspaceAlignment), std::nothrow);
    if (!workspace_) fail(WEAVE_ERROR_OUT_OF_MEMORY, "cannot allocate ", workspace_bytes, " bytes of host workspace");
  }
}

HostBackend::~HostBackend() {
  if (workspace_) ::operator delete(workspace_, std::align_val_t(kWorkspaceAlignment));
}

std::string HostBackend::name() const { return "host (BLAS, " + kokkos_description() + ")"; }

void HostBackend::gemm(const plan::GemmOp& op, int, const exec::Bindings& bindings, const exec::Scalars& scalars,
                       const exec::ProgressHook& progress) {
  const exec::MatrixRef a = bindings.resolve(op.a), b = bindings.resolve(op.b), c = bindings.resolve(op.c);
  if (c.rows == 0 || c.cols == 0) return;
  const exec::ScalarValue alpha = scalars.complex_value(op.alpha), beta = scalars.complex_value(op.beta);
  const int64_t k = op.op_a == Op::N ? a.cols : a.rows;
  // Tiles of C when someone wants to be called between them: column tiles
  // (of C and op(B)), or row tiles (of C and op(A)) where C is taller than
  // wide, so that a tall, narrow product is called back as often.
  int64_t tiles = 1;
  const bool row_tiles = c.rows > c.cols;
  if (progress) {
    const double flops = 2.0 * static_cast<double>(c.rows) * static_cast<double>(c.cols) * static_cast<double>(k);
    tiles = std::clamp<int64_t>(static_cast<int64_t>(flops / options_.tile_flops), 1,
                                std::max<int64_t>(1, (row_tiles ? c.rows : c.cols) / options_.min_tile));
  }
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t extent = row_tiles ? c.rows : c.cols;
    const int64_t first = extent * t / tiles, count = extent * (t + 1) / tiles - first;
    const exec::MatrixRef c_tile =
        row_tiles ? kernels::op_rows(c, Op::N, first, count) : kernels::op_columns(c, Op::N, first, count);
    const exec::MatrixRef a_tile = row_tiles ? kernels::op_rows(a, op.op_a, first, count) : a;
    const exec::MatrixRef b_tile = row_tiles ? b : kernels::op_columns(b, op.op_b, first, count);
    const kernels::ColumnMajorGemm g = kernels::to_column_major(a_tile, op.op_a, b_tile, op.op_b, c_tile);
    switch (c.dtype) {
      case DType::F32: call_gemm<float, 1>(g, alpha, beta); break;
      case DType::F64: call_gemm<double, 1>(g, alpha, beta); break;
      case DType::C64: call_gemm<float, 2>(g, alpha, beta); break;
      case DType::C128: call_gemm<double, 2>(g, alpha, beta); break;
      default:
        fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend multiplies f32, f64, c64 and c128, not ",
             dtype_name(c.dtype));
    }
    if (progress && t + 1 < tiles) progress();
  }
}

void HostBackend::epilogue(const plan::EpilogueOp& op, int, const exec::Bindings& bindings,
                           const exec::Scalars& scalars) {
  const exec::MatrixRef dst = bindings.resolve(op.dst);
  if (dst.rows == 0 || dst.cols == 0) return;
  exec::MatrixRef src, bias;
  if (op.has_src) src = bindings.resolve(op.src);
  if (op.has_bias) bias = bindings.resolve(op.bias);
  const exec::MatrixRef* src_ptr = op.has_src ? &src : nullptr;
  MoreSources more;
  for (const plan::Region& r : op.more_src)
    more.data.at(static_cast<std::size_t>(more.count++)) = bindings.resolve(r).data;
  const exec::MatrixRef* bias_ptr = op.has_bias ? &bias : nullptr;
  const exec::ScalarValue src_scale = scalars.complex_value(op.src_scale),
                          dst_scale = scalars.complex_value(op.dst_scale);
  const DType src_type = op.has_src ? src.dtype : dst.dtype;
  using kernels::Complex;
  if (dst.dtype == DType::C128 && src_type == DType::C128)
    launch_epilogue<Complex<double>, Complex<double>>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale,
                                                      op.conjugate_src);
  else if (dst.dtype == DType::C64 && src_type == DType::C64)
    launch_epilogue<Complex<float>, Complex<float>>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale,
                                                    op.conjugate_src);
  else if (dst.dtype == DType::F64 && src_type == DType::F64)
    launch_epilogue<double, double>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else if (dst.dtype == DType::F32 && src_type == DType::F32)
    launch_epilogue<float, float>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else if (dst.dtype == DType::F64 && src_type == DType::F32)
    launch_epilogue<double, float>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else if (dst.dtype == DType::F32 && src_type == DType::F64)
    launch_epilogue<float, double>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend handles f32, f64, c64 and c128, not ", dtype_name(dst.dtype),
         op.has_src ? str(" from ", dtype_name(src_type)) : std::string());
}

void HostBackend::rearrange(const plan::RearrangeOp& op, int, const exec::Bindings& bindings) {
  const MoreSources none;
  const exec::ScalarValue one{1.0, 0.0}, zero{};
  const bool conjugate = op.src_op == Op::C;
  using kernels::Complex;
  kernels::for_each_rectangle(op, bindings, [&](const exec::MatrixRef& dst, const exec::MatrixRef& src) {
    if (dst.dtype != src.dtype) fail(WEAVE_ERROR_INTERNAL, "a rearrangement converts between element types");
    switch (dst.dtype) {
      case DType::F64: launch_epilogue<double, double>(dst, &src, none, nullptr, one, zero); break;
      case DType::F32: launch_epilogue<float, float>(dst, &src, none, nullptr, one, zero); break;
      case DType::C128:
        launch_epilogue<Complex<double>, Complex<double>>(dst, &src, none, nullptr, one, zero, conjugate);
        break;
      case DType::C64:
        launch_epilogue<Complex<float>, Complex<float>>(dst, &src, none, nullptr, one, zero, conjugate);
        break;
      default:
        fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend handles f32, f64, c64 and c128, not ",
             dtype_name(dst.dtype));
    }
  });
}

}  // namespace weave::internal::host
