// Measures that chunks move over UCX while the host multiplies.
//
// Two ranks run an AG-GEMM ring whose shards are cut into chunks large
// enough for UCX's rendezvous protocol, which needs both sides to call
// ucp_worker_progress before any byte moves. The executor runs the real
// host backend (BLAS in column tiles) and the real UCX transport, wrapped in
// a recorder that notes when progress() is called and when each receive is
// first seen complete (the recorder polls every outstanding receive after
// each progress call, so "seen complete" is at most one GEMM tile late).
//
// What is asserted, robustly on a loaded machine:
//   1. the executor calls progress() inside every GEMM it cut into tiles;
//   2. in at least one of a few executes, on every rank, a remote chunk's
//      receive was seen complete inside a GEMM's span, and the chunk the
//      next GEMM consumes had arrived before the GEMM before it ended,
//      i.e. communication overlapped computation;
//   3. the product is right.
// Each rank prints what it saw per execute. Usage: mpiexec -n 2 weave_ucx_progress_check
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backends/host/host_backend.hpp"
#include "core/grid.hpp"
#include "core/matrix.hpp"
#include "core/problem.hpp"
#include "exec/executor.hpp"
#include "exec/trace.hpp"
#include "plan/schedule.hpp"
#include "transport/ucx/ucx_entry.hpp"

namespace {

using weave::internal::exec::Trace;
using weave::internal::plan::Step;
using weave::internal::plan::StepKind;

// Forwards to the UCX transport and records what happened when.
class RecordingTransport final : public weave::internal::transport::Transport {
 public:
  RecordingTransport(std::unique_ptr<weave::internal::transport::Transport> inner, const weave::internal::plan::Schedule& schedule,
                     const Trace& clock)
      : inner_(std::move(inner)), schedule_(schedule), clock_(clock) {}

  std::string name() const override { return "recording " + inner_->name(); }
  bool stream_ordered() const override { return false; }
  void begin_execute() override {
    inner_->begin_execute();
    progress_calls.clear();
    seen_complete_us.assign(schedule_.steps.size(), -1.0);
    outstanding_.clear();
  }
  int post(const Step& step, const weave::internal::exec::Bindings& bindings) override {
    const int request = inner_->post(step, bindings);
    outstanding_.push_back({request, static_cast<int>(&step - schedule_.steps.data())});
    return request;
  }
  bool test(int request) override {
    const bool done = inner_->test(request);
    if (done) note_complete(request);
    return done;
  }
  void progress() override {
    inner_->progress();
    progress_calls.push_back(clock_.now_us());
    for (const Posted& p : outstanding_)
      if (seen_complete_us[p.step] < 0 && inner_->test(p.request)) seen_complete_us[p.step] = clock_.now_us();
  }
  void abandon_outstanding(std::shared_ptr<const void> owner) override { inner_->abandon_outstanding(std::move(owner)); }

  std::vector<double> progress_calls;    // when progress() was called
  std::vector<double> seen_complete_us;  // per step: first seen complete (-1: not seen)

 private:
  struct Posted {
    int request, step;
  };
  void note_complete(int request) {
    for (const Posted& p : outstanding_)
      if (p.request == request && seen_complete_us[p.step] < 0) seen_complete_us[p.step] = clock_.now_us();
  }
  std::unique_ptr<weave::internal::transport::Transport> inner_;
  const weave::internal::plan::Schedule& schedule_;
  const Trace& clock_;
  std::vector<Posted> outstanding_;
};

// Exact in binary: small multiples of 1/8 and 1/4, so sums of products are exact.
double a_value(int64_t i, int64_t k) { return static_cast<double>((i * 7 + k * 3) % 11 - 5) / 8.0; }
double b_value(int64_t k, int64_t j) { return static_cast<double>((k * 5 + j * 2) % 13 - 6) / 4.0; }

weave::internal::MatrixDesc matrix(const std::shared_ptr<weave::internal::GridState>& grid, int64_t rows, int64_t cols,
                         weave_distribution_t distribution, const char* name) {
  weave_matrix_desc_t d{};
  d.rows = rows;
  d.cols = cols;
  d.dtype = WEAVE_FLOAT64;
  d.distribution = distribution;
  return weave::internal::make_matrix(grid, d, name);
}

struct Observation {
  int receives = 0;               // receives of remote chunks consumed by a GEMM
  int arrived_before_previous_gemm_ended = 0;
  int seen_inside_a_gemm = 0;
  int tiled_gemms = 0, tiled_gemms_with_progress = 0;
  int progress_calls_in_gemms = 0;
};

Observation observe(const weave::internal::plan::Schedule& s, const Trace& trace, const RecordingTransport& t) {
  struct Span {
    int step;
    double start, end;
  };
  std::vector<Span> gemms;
  for (const weave::internal::exec::TraceSpan& span : trace.spans())
    if (s.steps[span.step].kind() == StepKind::Gemm) gemms.push_back({span.step, span.start_us, span.end_us});
  std::sort(gemms.begin(), gemms.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
  Observation o;
  for (const Span& g : gemms) {
    const int calls = static_cast<int>(std::count_if(t.progress_calls.begin(), t.progress_calls.end(),
                                                     [&](double at) { return at > g.start && at < g.end; }));
    o.progress_calls_in_gemms += calls;
    ++o.tiled_gemms;  // every GEMM of this shape is cut into several tiles
    if (calls > 0) ++o.tiled_gemms_with_progress;
  }
  for (std::size_t n = 0; n < gemms.size(); ++n)
    for (int dep : s.steps[gemms[n].step].deps) {
      if (s.steps[dep].kind() != StepKind::Recv) continue;
      ++o.receives;
      const double seen = t.seen_complete_us[dep];
      if (seen < 0) continue;
      if (n > 0 && seen < gemms[n - 1].end) ++o.arrived_before_previous_gemm_ended;
      for (const Span& g : gemms)
        if (seen > g.start && seen < g.end) {
          ++o.seen_inside_a_gemm;
          break;
        }
    }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int exit_code = 0;
  try {
    if (size != 2) throw std::runtime_error("run this check on exactly 2 ranks");
    auto grid = weave::internal::GridState::create(MPI_COMM_WORLD, 2, 1, [] {});
    // 384 rows of A per rank in 3 chunks of 128 x 256 doubles (256 KiB each:
    // rendezvous); each chunk's GEMM is 2 * 128 * 512 * 256 = 34 Mflop.
    const int64_t m = 768, n = 1024, k = 256;
    const weave::internal::MatrixDesc a = matrix(grid, m, k, WEAVE_DIST_BLOCK_ROW, "A");
    const weave::internal::MatrixDesc b = matrix(grid, k, n, WEAVE_DIST_BLOCK_COLUMN, "B");
    const weave::internal::MatrixDesc c = matrix(grid, m, n, WEAVE_DIST_BLOCK_COLUMN, "C");
    const weave::internal::Problem problem =
        weave::internal::make_problem(*grid, weave::internal::Operation::AgGemm, WEAVE_GROUP_GRID, weave::internal::Op::N, weave::internal::Op::N, a, b, c, nullptr);
    weave::internal::plan::ScheduleOptions options;
    options.algorithm = weave::internal::plan::Algorithm::Ring;
    options.direction = weave::internal::plan::Direction::Forward;
    options.chunks_per_shard = 3;
    const weave::internal::plan::Schedule schedule = weave::internal::plan::build_schedule(problem, options);

    weave::internal::host::HostBackendOptions backend_options;
    backend_options.tile_flops = 2.0e6;  // about 16 tiles per chunk GEMM
    // Every GEMM in those tiles, even one that runs when nothing is in
    // flight (which the executor otherwise cuts coarser): property 1.
    backend_options.idle_tile_factor = 1;
    backend_options.min_tile = 1;
    weave::internal::host::HostBackend backend(schedule, backend_options);
    Trace trace;
    RecordingTransport transport(
        weave::internal::transport::make_ucx_transport(*grid, grid->group(WEAVE_GROUP_GRID), schedule, false), schedule, trace);
    weave::internal::exec::ExecutorOptions executor_options;
    executor_options.progress = weave::internal::exec::Progress::Tiles;
    executor_options.bounds.timeout = std::chrono::milliseconds(120000);
    executor_options.trace = &trace;
    weave::internal::exec::Executor executor(schedule, backend, transport, executor_options);

    std::vector<double> a_local(static_cast<std::size_t>(a.local_elements())),
        b_local(static_cast<std::size_t>(b.local_elements())), c_local(static_cast<std::size_t>(c.local_elements()));
    for (int64_t kk = 0; kk < a.local_cols; ++kk)
      for (int64_t i = 0; i < a.local_rows; ++i) a_local[i + kk * a.ld] = a_value(a.row_offset + i, kk);
    for (int64_t j = 0; j < b.local_cols; ++j)
      for (int64_t kk = 0; kk < b.local_rows; ++kk) b_local[kk + j * b.ld] = b_value(kk, b.col_offset + j);
    weave::internal::exec::Bindings bindings;
    bindings.schedule = &schedule;
    bindings.user = {a_local.data(), b_local.data(), c_local.data(), nullptr, nullptr};
    bindings.workspace = backend.workspace();
    const weave::internal::exec::Scalars scalars{1.0, 0.0};

    if (rank == 0) std::printf("%s\n", transport.name().c_str());
    bool overlapped = false, progress_in_every_gemm = true;
    const int attempts = 5;
    for (int attempt = 0; attempt < attempts; ++attempt) {
      MPI_Barrier(MPI_COMM_WORLD);
      executor.run(bindings, scalars, nullptr);
      const Observation o = observe(schedule, trace, transport);
      std::printf("rank %d execute %d: %d progress calls inside %d GEMMs (%d of them with any); remote chunks: %d, "
                  "seen complete inside a GEMM: %d, arrived before the preceding GEMM ended: %d\n",
                  rank, attempt, o.progress_calls_in_gemms, o.tiled_gemms, o.tiled_gemms_with_progress, o.receives,
                  o.seen_inside_a_gemm, o.arrived_before_previous_gemm_ended);
      progress_in_every_gemm = progress_in_every_gemm && o.tiled_gemms > 0 && o.tiled_gemms_with_progress == o.tiled_gemms;
      if (o.seen_inside_a_gemm > 0 && o.arrived_before_previous_gemm_ended > 0) overlapped = true;
    }

    // The product, exactly (every value is a small dyadic rational).
    int64_t wrong = 0;
    for (int64_t j = 0; j < c.local_cols; ++j)
      for (int64_t i = 0; i < m; ++i) {
        double expected = 0;
        for (int64_t kk = 0; kk < k; ++kk) expected += a_value(i, kk) * b_value(kk, c.col_offset + j);
        if (c_local[i + j * c.ld] != expected) ++wrong;
      }
    if (wrong) std::printf("rank %d: FAIL %lld elements of C are wrong\n", rank, static_cast<long long>(wrong));
    if (!progress_in_every_gemm) std::printf("rank %d: FAIL a tiled GEMM ran without a progress call\n", rank);
    if (!overlapped)
      std::printf("rank %d: FAIL in %d executes no remote chunk arrived while a GEMM ran\n", rank, attempts);
    exit_code = (wrong == 0 && progress_in_every_gemm && overlapped) ? 0 : 1;
  } catch (const std::exception& e) {
    std::printf("rank %d: FAIL %s\n", rank, e.what());
    exit_code = 1;
  }
  int worst = 0;
  MPI_Allreduce(&exit_code, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf(worst == 0 ? "PASSED: chunks moved over UCX while GEMMs ran\n" : "FAILED\n");
  MPI_Finalize();
  return worst;
}
