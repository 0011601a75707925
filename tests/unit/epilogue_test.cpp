// The element-wise step with a bias whose entries are not adjacent. A 1 x N
// bias stored column-major with ld > 1 has entry j at j * ld; row-major (or
// with ld 1) at j. The shared functor reads bias[j * bias_stride]; the host
// backend takes that stride from the bias region's buffer (its order and
// ld), for a region that starts at a column other than the first, as the
// schedules cut it for chunks of C. Every element outside what the step
// writes keeps its sentinel, and the bias is left as it was.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backends/host/host_backend.hpp"
#include "exec/bindings.hpp"
#include "kernels/epilogue.hpp"
#include "plan/schedule.hpp"

namespace weave_test {
namespace {

using namespace weave::internal;

constexpr double kSentinel = 12345.0;

// A rows x cols block with leading dimension ld in a buffer whose every
// other element holds kSentinel.
struct Block {
  int64_t rows = 0, cols = 0, ld = 1;
  bool row_major = false;
  std::vector<double> data;

  Block(int64_t rows_, int64_t cols_, int64_t ld_, bool row_major_)
      : rows(rows_), cols(cols_), ld(ld_), row_major(row_major_),
        data(static_cast<std::size_t>(ld_ * (row_major_ ? rows_ : cols_)), kSentinel) {}
  std::size_t at(int64_t i, int64_t j) const { return static_cast<std::size_t>(row_major ? i * ld + j : i + j * ld); }
  double& operator()(int64_t i, int64_t j) { return data[at(i, j)]; }
  // Elements outside the block still hold the sentinel.
  bool gaps_intact() const {
    std::vector<bool> inside(data.size(), false);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) inside[at(i, j)] = true;
    for (std::size_t p = 0; p < data.size(); ++p)
      if (!inside[p] && data[p] != kSentinel) return false;
    return true;
  }
};

// A bias of `cols` entries `stride` apart, sentinels between them.
std::vector<double> strided_bias(int64_t cols, int64_t stride) {
  std::vector<double> bias(static_cast<std::size_t>(stride * (cols - 1) + 1), kSentinel);
  for (int64_t j = 0; j < cols; ++j) bias[static_cast<std::size_t>(j * stride)] = 10.0 * static_cast<double>(j + 1);
  return bias;
}

double source_value(int64_t i, int64_t j) { return static_cast<double>(i) + 0.25 * static_cast<double>(j); }

TEST(EpilogueFunctor, ReadsBiasEntriesItsStrideApart) {
  const int64_t rows = 3, cols = 4;
  for (const bool row_major : {false, true})
    for (const int64_t stride : {1, 2, 3}) {
      SCOPED_TRACE(testing::Message() << (row_major ? "row-major" : "column-major") << " dst, bias stride " << stride);
      const int64_t ld = (row_major ? cols : rows) + 2;
      Block dst(rows, cols, ld, row_major), src(rows, cols, ld, row_major);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) src(i, j) = source_value(i, j);
      const std::vector<double> bias = strided_bias(cols, stride);
      const std::vector<double> bias_before = bias;

      kernels::EpilogueFunctor<double, double> f;
      f.dst = dst.data.data();
      f.dst_ld = ld;
      f.dst_row_major = row_major;
      f.src = src.data.data();
      f.src_ld = ld;
      f.src_row_major = row_major;
      f.bias = bias.data();
      f.bias_stride = stride;
      f.src_scale = 2.0;
      f.rows = rows;
      f.cols = cols;
      for (int64_t index = 0; index < f.size(); ++index) f(index);

      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          EXPECT_EQ(dst(i, j), 2.0 * source_value(i, j) + 10.0 * static_cast<double>(j + 1)) << "at " << i << "," << j;
      EXPECT_TRUE(dst.gaps_intact());
      EXPECT_EQ(bias, bias_before);
    }
}

// The caller's buffers of a schedule: C (rows x cols, column-major, tight)
// and a 1 x cols bias in `bias_order` with leading dimension `bias_ld`.
plan::Schedule caller_buffers(int64_t rows, int64_t cols, Order bias_order, int64_t bias_ld) {
  plan::Schedule s;
  s.buffers.resize(plan::kFirstWorkspaceBuffer);
  for (int id = 0; id < plan::kFirstWorkspaceBuffer; ++id) s.buffers[static_cast<std::size_t>(id)].name = plan::buffer_name(id);
  plan::BufferSpec& c = s.buffers[plan::kBufferC];
  c.rows = rows;
  c.cols = cols;
  c.ld = rows;
  plan::BufferSpec& bias = s.buffers[plan::kBufferBias];
  bias.rows = 1;
  bias.cols = cols;
  bias.ld = bias_ld;
  bias.order = bias_order;
  return s;
}

TEST(HostBackendEpilogue, HonoursTheBiasOrderAndLd) {
  const int64_t rows = 3, cols = 5;
  // Column-major bias with ld 1 and 3 (entries 1 and 3 apart), row-major
  // with a padded ld (entries adjacent).
  const struct {
    Order order;
    int64_t ld, stride;
  } layouts[] = {{Order::ColMajor, 1, 1}, {Order::ColMajor, 3, 3}, {Order::RowMajor, cols + 2, 1}};
  for (const auto& layout : layouts) {
    SCOPED_TRACE(testing::Message() << order_name(layout.order) << " bias with ld " << layout.ld);
    const plan::Schedule schedule = caller_buffers(rows, cols, layout.order, layout.ld);
    Block c(rows, cols, rows, false);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) c(i, j) = source_value(i, j);
    std::vector<double> bias = strided_bias(cols, layout.stride);
    bias.resize(static_cast<std::size_t>(layout.order == Order::ColMajor ? layout.ld * (cols - 1) + 1 : layout.ld),
                kSentinel);
    const std::vector<double> bias_before = bias;

    exec::Bindings bindings;
    bindings.schedule = &schedule;
    bindings.user[plan::kBufferC] = c.data.data();
    bindings.user[plan::kBufferBias] = bias.data();
    // C += bias on columns 1..3, as a schedule adds the bias to one chunk of C.
    const int64_t col0 = 1, chunk_cols = 3;
    plan::EpilogueOp op;
    op.dst = plan::Region{plan::kBufferC, 0, col0, rows, chunk_cols};
    op.dst_scale = plan::Scalar::One;
    op.has_bias = true;
    op.bias = plan::Region{plan::kBufferBias, 0, col0, 1, chunk_cols};
    host::HostBackend backend(schedule, host::HostBackendOptions{});
    backend.epilogue(op, 0, bindings, exec::Scalars{});

    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const bool in_chunk = j >= col0 && j < col0 + chunk_cols;
        EXPECT_EQ(c(i, j), source_value(i, j) + (in_chunk ? 10.0 * static_cast<double>(j + 1) : 0.0))
            << "at " << i << "," << j;
      }
    EXPECT_EQ(bias, bias_before);
  }
}

// The host backend cuts a GEMM into column tiles with a progress call
// between them: tiles of tile_flops while transfers are in flight, tiles
// idle_tile_factor times coarser when the calls only send arrival notices
// (from the start, or from the call that says no transfer is left), never
// narrower than min_tile, none without a hook; the product is the
// same every way.
TEST(HostBackendGemm, TilesFollowTheProgressHook) {
  const int64_t m = 16, n = 256, k = 8;  // 65536 flops
  plan::Schedule s = caller_buffers(m, n, Order::ColMajor, 1);
  s.buffers[plan::kBufferA].rows = m;
  s.buffers[plan::kBufferA].cols = k;
  s.buffers[plan::kBufferA].ld = m;
  s.buffers[plan::kBufferB].rows = k;
  s.buffers[plan::kBufferB].cols = n;
  s.buffers[plan::kBufferB].ld = k;
  std::vector<double> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (std::size_t x = 0; x < a.size(); ++x) a[x] = 0.25 * static_cast<double>(x % 7);
  for (std::size_t x = 0; x < b.size(); ++x) b[x] = 0.5 * static_cast<double>(x % 5);
  plan::GemmOp op;
  op.a = plan::Region{plan::kBufferA, 0, 0, m, k};
  op.b = plan::Region{plan::kBufferB, 0, 0, k, n};
  op.c = plan::Region{plan::kBufferC, 0, 0, m, n};
  op.alpha = plan::Scalar::One;
  // 256 flops per column: tiles of 16 columns, idle ones of 64.
  std::vector<double> reference;
  struct Way {
    bool hook, in_flight;
    int in_flight_calls;  // calls that still report transfers in flight
    int64_t min_columns;
    int calls;
  };
  for (const Way& way : {Way{false, false, 0, 1, 0}, Way{true, true, 1000, 1, 15}, Way{true, false, 0, 1, 3},
                         Way{true, true, 1, 1, 5}, Way{true, true, 1000, 128, 1}}) {
    host::HostBackendOptions options;
    options.tile_flops = 4096;
    options.idle_tile_factor = 4;
    options.min_tile = way.min_columns;
    host::HostBackend backend(s, options);
    std::vector<double> c(static_cast<std::size_t>(m * n), 0.0);
    exec::Bindings bindings;
    bindings.schedule = &s;
    bindings.user[plan::kBufferA] = a.data();
    bindings.user[plan::kBufferB] = b.data();
    bindings.user[plan::kBufferC] = c.data();
    int calls = 0;
    exec::ProgressHook hook;
    if (way.hook) hook.call = [&] { return ++calls <= way.in_flight_calls; };
    hook.transfers_in_flight = way.in_flight;
    backend.gemm(op, 0, bindings, exec::Scalars{}, hook);
    EXPECT_EQ(calls, way.calls) << "hook " << way.hook << ", transfers in flight " << way.in_flight << " for "
                                << way.in_flight_calls << " calls, tiles of at least " << way.min_columns;
    if (reference.empty())
      reference = c;
    else
      EXPECT_EQ(c, reference);
  }
}

}  // namespace
}  // namespace weave_test
