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

namespace weave::internal::host {

namespace {
constexpr std::size_t kWorkspaceAlignment = 256;

blas_int to_blas_int(int64_t value, const char* what) {
  if (value > static_cast<int64_t>(std::numeric_limits<blas_int>::max()))
    fail(WEAVE_ERROR_UNSUPPORTED, what, " = ", value,
         " exceeds the BLAS integer range; configure with WEAVE_BLAS_ILP64=ON and a 64-bit-integer BLAS");
  return static_cast<blas_int>(value);
}

template <class T>
void call_gemm(const kernels::ColumnMajorGemm& g, T alpha, T beta) {
  const char ta = g.op_left == Op::N ? 'N' : 'T', tb = g.op_right == Op::N ? 'N' : 'T';
  const blas_int m = to_blas_int(g.m, "m"), n = to_blas_int(g.n, "n"), k = to_blas_int(g.k, "k");
  const blas_int lda = to_blas_int(g.ld_left, "lda"), ldb = to_blas_int(g.ld_right, "ldb"),
                 ldc = to_blas_int(g.ld_out, "ldc");
  const T* a = static_cast<const T*>(g.left);
  const T* b = static_cast<const T*>(g.right);
  T* c = static_cast<T*>(g.out);
  if constexpr (std::is_same_v<T, float>)
    sgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
  else
    dgemm_(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
}

// Further sources, resolved without allocating (execute allocates nothing).
struct MoreSources {
  std::array<const void*, kernels::kMaxMoreSources> data{};
  int count = 0;
};

template <class Dst, class Src>
void launch_epilogue(const exec::MatrixRef& dst, const exec::MatrixRef* src, const MoreSources& more,
                     const exec::MatrixRef* bias, double src_scale, double dst_scale) {
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
  f.src_scale = static_cast<typename decltype(f)::Acc>(src_scale);
  f.dst_scale = static_cast<typename decltype(f)::Acc>(dst_scale);
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
  const double alpha = scalars.value(op.alpha), beta = scalars.value(op.beta);
  const int64_t k = op.op_a == Op::N ? a.cols : a.rows;
  // Column tiles of C (and of op(B)) when someone wants to be called
  // between them: tile_flops wide while transfers are in flight, the rest
  // of C in tiles idle_tile_factor times wider once the calls say none is.
  const double flops_per_column = 2.0 * static_cast<double>(c.rows) * static_cast<double>(k);
  auto tile_columns = [&](bool in_flight) {
    if (!progress) return c.cols;
    const double flops = options_.tile_flops * (in_flight ? 1.0 : options_.idle_tile_factor);
    const int64_t columns = flops_per_column > 0 ? static_cast<int64_t>(flops / flops_per_column) : c.cols;
    return std::clamp<int64_t>(columns, options_.min_tile_columns, c.cols);
  };
  bool in_flight = progress && progress.transfers_in_flight;
  for (int64_t col0 = 0; col0 < c.cols;) {
    const int64_t cols = std::min(tile_columns(in_flight), c.cols - col0);
    const exec::MatrixRef c_tile = kernels::op_columns(c, Op::N, col0, cols);
    const exec::MatrixRef b_tile = kernels::op_columns(b, op.op_b, col0, cols);
    const kernels::ColumnMajorGemm g = kernels::to_column_major(a, op.op_a, b_tile, op.op_b, c_tile);
    switch (c.dtype) {
      case DType::F32: call_gemm<float>(g, static_cast<float>(alpha), static_cast<float>(beta)); break;
      case DType::F64: call_gemm<double>(g, alpha, beta); break;
      default:
        fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend multiplies f32 and f64, not ", dtype_name(c.dtype));
    }
    col0 += cols;
    if (progress && col0 < c.cols) in_flight = progress();
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
  const double src_scale = scalars.value(op.src_scale), dst_scale = scalars.value(op.dst_scale);
  const DType src_type = op.has_src ? src.dtype : dst.dtype;
  if (dst.dtype == DType::F64 && src_type == DType::F64)
    launch_epilogue<double, double>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else if (dst.dtype == DType::F32 && src_type == DType::F32)
    launch_epilogue<float, float>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else if (dst.dtype == DType::F64 && src_type == DType::F32)
    launch_epilogue<double, float>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else if (dst.dtype == DType::F32 && src_type == DType::F64)
    launch_epilogue<float, double>(dst, src_ptr, more, bias_ptr, src_scale, dst_scale);
  else
    fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the host backend handles f32 and f64, not ", dtype_name(dst.dtype));
}

}  // namespace weave::internal::host
