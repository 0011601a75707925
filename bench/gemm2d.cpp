#include "gemm2d.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "run_plan.hpp"
#include "scalapack_peer.hpp"
#include "weave/weave.hpp"

namespace bench {

namespace {

// How far two correct results may lie apart (relative Frobenius norm): the
// plans sum K in other orders, and 16-bit results are rounded once each.
double tolerance(weave_dtype_t t) {
  switch (component_type(t)) {
    case WEAVE_FLOAT64: return 1e-10;
    case WEAVE_FLOAT32: return 1e-4;
    default: return 2e-2;
  }
}

// The ranks of one grid row (or column), as an MPI communicator.
class SubCommunicator {
 public:
  SubCommunicator(int color, int key) { MPI_Comm_split(MPI_COMM_WORLD, color, key, &comm_); }
  ~SubCommunicator() { MPI_Comm_free(&comm_); }
  SubCommunicator(const SubCommunicator&) = delete;
  SubCommunicator& operator=(const SubCommunicator&) = delete;
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// What every rank of `comm` holds, for an all-gather of it.
Collective gather_of(MPI_Comm comm, weave_dtype_t t, int64_t mine) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  Collective c;
  c.kind = Collective::AllGather;
  c.dtype = t;
  c.counts.resize(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, 1, MPI_INT64_T, c.counts.data(), 1, MPI_INT64_T, comm);
  return c;
}

// One grid: the Weave grid, its rows and columns for the communication
// alone, and ScaLAPACK's grid of the same shape where it is measured.
struct GridContext {
  GridContext(int pr, int pc, int rank, const Gemm2dOptions& o, bool with_pblas)
      : grid(MPI_COMM_WORLD, pr, pc),
        row(rank / pc, rank % pc),
        column(rank % pc, rank / pc),
        row_comm(row.get(), o.device),
        column_comm(column.get(), o.device) {
    if (with_pblas) pblas.emplace(pr, pc);
  }
  weave::Grid grid;
  SubCommunicator row, column;
  Communicator row_comm, column_comm;
  std::optional<PblasGemm> pblas;
};

// One shape and block size on one grid.
class Gemm2dCase {
 public:
  Gemm2dCase(GridContext& g, const weave::Grid& self, const Gemm2dOptions& o, const Shape& s, int64_t block)
      : g_(g), o_(o), shape_(s), block_(block) {
    const weave_dtype_t t = o.dtype;
    const weave_memory_t memory = o.device ? WEAVE_MEMORY_DEVICE : WEAVE_MEMORY_HOST;
    a_ = std::make_unique<weave::Matrix>(g.grid, weave::block_cyclic(s.m, s.k, t, block, block).memory(memory));
    b_ = std::make_unique<weave::Matrix>(g.grid, weave::block_cyclic(s.k, s.n, t, block, block).memory(memory));
    c_ = std::make_unique<weave::Matrix>(g.grid, weave::block_cyclic(s.m, s.n, t, block, block).memory(memory));
    a_buf_ = buffer_for(*a_);
    b_buf_ = buffer_for(*b_);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fill_random(a_buf_, t, 1000 + rank);
    fill_random(b_buf_, t, 2000 + rank);
    for (Buffer* c : {&c_weave_, &c_sequential_, &c_pblas_}) *c = buffer_for(*c_);
    // Weave as users get it: the automatic plan (SUMMA, SUMMA in bands of C
    // or the sequential variant; describe says which).
    weave_ = plan(WEAVE_ALGORITHM_AUTO, !o.trace.empty());
    sequential_ = plan(WEAVE_ALGORITHM_SEQUENTIAL, false);

    // The GEMM alone: this rank's C block over all of K, one call.
    local_m_ = c_->local_rows();
    local_n_ = c_->local_cols();
    if (local_m_ > 0 && local_n_ > 0) {
      gemm_a_ = std::make_unique<weave::Matrix>(self, weave::block_2d(local_m_, s.k, t).memory(memory));
      gemm_b_ = std::make_unique<weave::Matrix>(self, weave::block_2d(s.k, local_n_, t).memory(memory));
      gemm_c_ = std::make_unique<weave::Matrix>(self, weave::block_2d(local_m_, local_n_, t).memory(memory));
      gemm_a_buf_ = buffer_for(*gemm_a_);
      gemm_b_buf_ = buffer_for(*gemm_b_);
      gemm_c_buf_ = buffer_for(*gemm_c_);
      fill_random(gemm_a_buf_, t, 4000 + rank);
      fill_random(gemm_b_buf_, t, 5000 + rank);
      weave::PlanDesc d(WEAVE_GEMM, *gemm_a_, *gemm_b_, *gemm_c_);
      d.flags(WEAVE_FLAG_NO_EXECUTE_CHECK);
      gemm_ = std::make_unique<weave::Plan>(self, d);
    }
    // The communication alone: what SUMMA moves, A's blocks all-gathered
    // along the grid rows and B's along the grid columns.
    row_gather_ = gather_of(g.row.get(), t, a_->local_elements());
    column_gather_ = gather_of(g.column.get(), t, b_->local_elements());
    g.row_comm.prepare(row_gather_);
    g.column_comm.prepare(column_gather_);
  }

  std::vector<std::function<void()>> bodies(Timer& timer) {
    std::vector<std::function<void()>> b = {
        [&] {
          if (gemm_) run_plan(*gemm_, timer, gemm_a_buf_, gemm_b_buf_, gemm_c_buf_);
        },
        [&] {
          g_.row_comm.run(row_gather_, timer.stream());
          g_.column_comm.run(column_gather_, timer.stream());
        },
        [&] { run_plan(*sequential_, timer, a_buf_, b_buf_, c_sequential_); },
        [&] { run_plan(*weave_, timer, a_buf_, b_buf_, c_weave_); },
    };
    if (g_.pblas) b.push_back([&] { run_pblas(); });
    return b;
  }

  // The results of one more execute of each, into poisoned C: Weave's against
  // the sequential plan and against ScaLAPACK (-1 where not measured).
  std::pair<double, double> differences(Timer& timer) {
    for (Buffer* c : {&c_weave_, &c_sequential_, &c_pblas_}) poison(*c);
    run_plan(*sequential_, timer, a_buf_, b_buf_, c_sequential_);
    run_plan(*weave_, timer, a_buf_, b_buf_, c_weave_);
    timer.synchronize();
    const double sequential = relative_difference(c_weave_, c_sequential_, o_.dtype, MPI_COMM_WORLD);
    double pblas = -1;
    if (g_.pblas) {
      run_pblas();
      pblas = relative_difference(c_weave_, c_pblas_, o_.dtype, MPI_COMM_WORLD);
    }
    return {sequential, pblas};
  }

  double local_flops() const {
    return 2.0 * components(o_.dtype) * components(o_.dtype) * static_cast<double>(local_m_) * local_n_ * shape_.k;
  }
  std::string describe() const { return weave_->describe(); }
  void write_trace(const std::string& path) const { weave_->write_trace(path); }

 private:
  Buffer buffer_for(const weave::Matrix& m) const {
    return Buffer(m.local_elements() * static_cast<int64_t>(element_size(o_.dtype)), o_.device);
  }
  std::unique_ptr<weave::Plan> plan(weave_algorithm_t algorithm, bool trace) const {
    weave::PlanDesc d(WEAVE_GEMM, *a_, *b_, *c_);
    d.algorithm(algorithm).transport(o_.transport).flags(WEAVE_FLAG_NO_EXECUTE_CHECK |
                                                         (trace ? WEAVE_FLAG_TRACE : 0));
    return std::make_unique<weave::Plan>(g_.grid, d);
  }
  // ScaLAPACK wants LLD >= 1 where a process holds no rows.
  void run_pblas() {
    auto lld = [](const weave::Matrix& m) { return std::max<int64_t>(m.ld(), 1); };
    g_.pblas->multiply(o_.dtype, shape_.m, shape_.n, shape_.k, block_, block_, {a_buf_.data(), lld(*a_)},
                       {b_buf_.data(), lld(*b_)}, c_pblas_.data(), lld(*c_));
  }

  GridContext& g_;
  const Gemm2dOptions& o_;
  Shape shape_;
  int64_t block_;
  std::unique_ptr<weave::Matrix> a_, b_, c_, gemm_a_, gemm_b_, gemm_c_;
  Buffer a_buf_, b_buf_, c_weave_, c_sequential_, c_pblas_, gemm_a_buf_, gemm_b_buf_, gemm_c_buf_;
  std::unique_ptr<weave::Plan> weave_, sequential_, gemm_;
  int64_t local_m_ = 0, local_n_ = 0;
  Collective row_gather_, column_gather_;
};

}  // namespace

bool run_gemm2d(const Gemm2dOptions& o, Timer& timer, nlohmann::json& results) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool pblas = !o.device && PblasGemm::available();
  if (rank == 0) {
    std::printf("WEAVE_GEMM: the automatic and the sequential plans%s; block-cyclic A, B, C, op N N\n",
                pblas ? ", ScaLAPACK's p?gemm on the same arrays" : " (no ScaLAPACK in this build or on devices)");
    std::printf("%-5s %6s %-20s %8s %8s %9s %8s %8s %6s %6s %6s %7s\n", "grid", "block", "shape MxKxN", "gemm ms",
                "comm ms", "pdgemm ms", "seq ms", "weave ms", "w/seq", "w/pdg", "w/max", "TFLOP/s");
  }
  bool agree = true;
  weave::Grid self(MPI_COMM_SELF);
  for (const auto& [pr, pc] : o.grids) {
    if (pr * pc != size)
      throw std::runtime_error("grid " + std::to_string(pr) + "x" + std::to_string(pc) + " does not span the " +
                               std::to_string(size) + " ranks");
    GridContext g(pr, pc, rank, o, pblas);
    for (int64_t block : o.blocks)
      for (const Shape& shape : o.shapes) {
        Gemm2dCase c(g, self, o, shape, block);
        const std::vector<double> ms = measure_in_turn(o.warmup, o.iterations, timer, c.bodies(timer));
        const double gemm_ms = ms[0], comm_ms = ms[1], sequential_ms = ms[2], weave_ms = ms[3];
        const double pblas_ms = pblas ? ms[4] : 0.0;
        const auto [to_sequential, to_pblas] = c.differences(timer);
        if (!o.trace.empty()) c.write_trace(o.trace);  // the last case's remains
        const double tol = tolerance(o.dtype);
        const bool ok = to_sequential <= tol && (!pblas || to_pblas <= tol);  // false for NaN
        agree = agree && ok;
        double flops = c.local_flops(), max_flops = 0;
        MPI_Allreduce(&flops, &max_flops, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        const double limit = std::max(gemm_ms, comm_ms);
        const std::string grid = std::to_string(pr) + "x" + std::to_string(pc);
        const std::string describe = c.describe();
        if (rank != 0) continue;
        char pblas_text[32] = "-", ratio_text[32] = "-";
        if (pblas) {
          std::snprintf(pblas_text, sizeof pblas_text, "%.3f", pblas_ms);
          std::snprintf(ratio_text, sizeof ratio_text, "%.3f", weave_ms / pblas_ms);
        }
        std::printf("%-5s %6lld %-20s %8.3f %8.3f %9s %8.3f %8.3f %6.3f %6s %6.3f %7.3f%s\n", grid.c_str(),
                    static_cast<long long>(block), shape.label().c_str(), gemm_ms, comm_ms, pblas_text, sequential_ms,
                    weave_ms, weave_ms / sequential_ms, ratio_text, weave_ms / limit,
                    max_flops / (weave_ms * 1e-3) / 1e12, ok ? "" : "  RESULTS DIFFER");
        nlohmann::json record = {{"op", "GEMM"},
                                 {"grid", grid},
                                 {"block", block},
                                 {"shape", shape.label()},
                                 {"m", shape.m},
                                 {"k", shape.k},
                                 {"n", shape.n},
                                 {"dtype", o.dtype_name},
                                 {"ranks", size},
                                 {"backend", o.device ? "cuda" : "host"},
                                 {"gemm_ms", gemm_ms},
                                 {"comm_ms", comm_ms},
                                 {"sequential_ms", sequential_ms},
                                 {"weave_ms", weave_ms},
                                 {"weave_over_sequential", weave_ms / sequential_ms},
                                 {"weave_over_limit", weave_ms / limit},
                                 {"tflops_per_rank", max_flops / (weave_ms * 1e-3) / 1e12},
                                 {"difference_to_sequential", to_sequential},
                                 {"describe_weave", describe}};
        if (pblas) {
          record["pdgemm_ms"] = pblas_ms;
          record["weave_over_pdgemm"] = weave_ms / pblas_ms;
          record["difference_to_pdgemm"] = to_pblas;
        }
        if (!ok) record["error"] = "results differ by more than the type allows";
        results.push_back(record);
      }
  }
  return agree;
}

}  // namespace bench
