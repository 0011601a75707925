// The host backend's GEMM cut into tiles with a progress call between them
// (WEAVE_PROGRESS_TILES), each at least HostBackendOptions::min_tile wide:
// column tiles of C and op(B) where C is at least as wide as tall, row tiles
// of C and op(A) where it is taller, so that a tall, narrow product (SUMMA's
// panels of a tall-skinny C) calls back as often as a wide one. Every tiling
// gives the untiled product, for every op and storage order, and leaves the
// padding of a larger ld alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/host/host_backend.hpp"
#include "exec/bindings.hpp"
#include "plan/schedule.hpp"

namespace weave_test {
namespace {

using namespace weave::internal;

constexpr double kSentinel = -777.0;

struct Stored {
  int64_t rows, cols, ld;
  Order order;
  std::vector<double> data;
  Stored(int64_t r, int64_t c, Order o)
      : rows(r), cols(c), ld((o == Order::ColMajor ? r : c) + 3), order(o),
        data(static_cast<std::size_t>(ld * (o == Order::ColMajor ? c : r)), kSentinel) {}
  std::size_t at(int64_t i, int64_t j) const {
    return static_cast<std::size_t>(order == Order::ColMajor ? i + j * ld : i * ld + j);
  }
  plan::BufferSpec spec() const {
    plan::BufferSpec b;
    b.rows = rows;
    b.cols = cols;
    b.ld = ld;
    b.order = order;
    return b;
  }
};

// op(X)(i, j) of a stored X.
double op_entry(const Stored& x, Op op, int64_t i, int64_t j) {
  return op == Op::N ? x.data[x.at(i, j)] : x.data[x.at(j, i)];
}

TEST(HostGemmTiles, EveryTilingGivesTheProduct) {
  const struct {
    int64_t m, n, k;
  } shapes[] = {{300, 40, 17}, {40, 300, 17}, {64, 64, 9}};
  for (const auto& shape : shapes)
    for (const Op op_a : {Op::N, Op::T})
      for (const Op op_b : {Op::N, Op::T})
        for (const Order order : {Order::ColMajor, Order::RowMajor})
          for (const int64_t min_tile : {int64_t{32}, host::HostBackendOptions{}.min_tile}) {
            SCOPED_TRACE(testing::Message() << "min_tile " << min_tile << " " << shape.m << "x" << shape.n << "x"
                                            << shape.k << " op_a " << op_name(op_a) << " op_b " << op_name(op_b) << " "
                                            << order_name(order));
            Stored a(op_a == Op::N ? shape.m : shape.k, op_a == Op::N ? shape.k : shape.m, order);
            Stored b(op_b == Op::N ? shape.k : shape.n, op_b == Op::N ? shape.n : shape.k,
                     order == Order::ColMajor ? Order::RowMajor : Order::ColMajor);
            Stored c(shape.m, shape.n, order);
            for (int64_t i = 0; i < a.rows; ++i)
              for (int64_t j = 0; j < a.cols; ++j) a.data[a.at(i, j)] = static_cast<double>((i * 3 + j * 5) % 11) - 5;
            for (int64_t i = 0; i < b.rows; ++i)
              for (int64_t j = 0; j < b.cols; ++j) b.data[b.at(i, j)] = static_cast<double>((i * 7 + j) % 13) - 6;
            plan::Schedule s;
            s.buffers.resize(plan::kFirstWorkspaceBuffer);
            s.buffers[plan::kBufferA] = a.spec();
            s.buffers[plan::kBufferB] = b.spec();
            s.buffers[plan::kBufferC] = c.spec();
            exec::Bindings bindings;
            bindings.schedule = &s;
            bindings.user[plan::kBufferA] = a.data.data();
            bindings.user[plan::kBufferB] = b.data.data();
            bindings.user[plan::kBufferC] = c.data.data();
            plan::GemmOp op;
            op.a = plan::Region{plan::kBufferA, 0, 0, a.rows, a.cols};
            op.op_a = op_a;
            op.b = plan::Region{plan::kBufferB, 0, 0, b.rows, b.cols};
            op.op_b = op_b;
            op.c = plan::Region{plan::kBufferC, 0, 0, c.rows, c.cols};
            op.alpha = plan::Scalar::One;
            op.beta = plan::Scalar::Zero;
            // Tiles of about 2 * 32 * 32 * k flops, but at least min_tile
            // rows or columns of C wide.
            host::HostBackendOptions options;
            options.tile_flops = 2.0 * 32 * 32 * static_cast<double>(shape.k);
            options.min_tile = min_tile;
            host::HostBackend backend(s, options);
            int calls = 0;
            exec::ProgressHook hook;
            hook.call = [&] {
              ++calls;
              return true;  // transfers stay in flight: every tile of tile_flops
            };
            backend.gemm(op, 0, bindings, exec::Scalars{}, hook);
            // Tiles of the longer side, each 32 * 32 / shorter lines (of
            // tile_flops) but at least min_tile, the last one what is left.
            const int64_t longer = std::max(shape.m, shape.n), shorter = std::min(shape.m, shape.n);
            const int64_t tile_lines = std::min(longer, std::max<int64_t>(min_tile, 32 * 32 / shorter));
            const int64_t tiles = (longer + tile_lines - 1) / tile_lines;
            EXPECT_EQ(calls, tiles - 1) << "progress calls between the tiles of the longer side";
            for (int64_t i = 0; i < shape.m; ++i)
              for (int64_t j = 0; j < shape.n; ++j) {
                double want = 0;
                for (int64_t p = 0; p < shape.k; ++p) want += op_entry(a, op_a, i, p) * op_entry(b, op_b, p, j);
                ASSERT_EQ(c.data[c.at(i, j)], want) << "at " << i << "," << j;
              }
            // The padding between the rows (or columns) of C is untouched.
            const bool col_major = order == Order::ColMajor;
            const int64_t lines = col_major ? shape.n : shape.m, length = col_major ? shape.m : shape.n;
            for (int64_t line = 0; line < lines; ++line)
              for (int64_t p = length; p < c.ld; ++p)
                ASSERT_EQ(c.data[static_cast<std::size_t>(line * c.ld + p)], kSentinel);
          }
}

}  // namespace
}  // namespace weave_test
