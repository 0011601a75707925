#include "api/calibration.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>

#include "backends/cuda/cuda_entry.hpp"
#include "backends/host/host_backend.hpp"
#include "core/agreement.hpp"
#include "core/arrival_notices.hpp"
#include "core/checked.hpp"
#include "core/error.hpp"
#include "exec/executor.hpp"
#include "plan/calibration_schedules.hpp"
#include "transport/registry.hpp"

namespace weave::internal {

namespace {

// Each dimension of the calibration GEMM at most this: large enough for the
// GEMM's rate at that shape, small enough to take milliseconds.
constexpr int64_t kHostGemmCap = 512;
constexpr int64_t kDeviceGemmCap = 4096;
// Each way of moving data is timed at two sizes (bytes of a rank's buffer):
// the plan's own (the whole of what its sequential collective moves,
// rounded up to a power of two: MPI and NCCL switch algorithms with the
// size, so small transfers do not predict large ones), at most the cap,
// and a sixteenth of it, at least the floor.
constexpr double kHostFloorBytes = 64.0 * 1024, kHostCapBytes = 32.0 * 1024 * 1024;
constexpr double kDeviceFloorBytes = 1024.0 * 1024, kDeviceCapBytes = 256.0 * 1024 * 1024;
constexpr double kSmallFraction = 1.0 / 16;

// The larger calibration size for `problem`.
double plan_bytes(const Problem& problem, bool device) {
  const bool ag = problem.operation == Operation::AgGemm;
  const double element = static_cast<double>(dtype_size(ag ? problem.dtype : accumulation_type(problem.dtype)));
  const double whole = static_cast<double>(problem.m) * static_cast<double>(ag ? problem.k : problem.n) * element;
  const double floor = device ? kDeviceFloorBytes : kHostFloorBytes, cap = device ? kDeviceCapBytes : kHostCapBytes;
  double bytes = floor / kSmallFraction;
  while (bytes < whole && bytes < cap) bytes *= 2;
  return std::min(bytes, cap);
}
// Timed runs after one warm-up; the median counts (a loaded machine's
// fastest run is not what a plan will see).
constexpr int kRepeats = 3;

double median(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}
// Calibration workspace is filled with this byte: a small normal number in
// every element type (a GEMM on zeros would run faster than on data).
constexpr int kFillByte = 0x3C;

// What the GEMM's calibration runs beside: nothing.
class NoTransport final : public transport::Transport {
 public:
  std::string name() const override { return "none"; }
  bool stream_ordered() const override { return false; }
};

// The caller's buffers of a schedule (A, B, C, bias, ...; null: none).
using UserBuffers = std::array<const void*, plan::kFirstWorkspaceBuffer>;

class Runner {
 public:
  // `notices` (on a communicator of the group's own): each execute is a
  // call of it, so a rank whose execute fails tells the others, which then
  // fail at once instead of waiting for it until their timeout.
  Runner(GridState& grid, const GroupView& group, const plan::Resolved& resolved, const WaitBounds& bounds, bool device,
         ArrivalNotices* notices)
      : grid_(grid), group_(group), resolved_(resolved), bounds_(bounds), device_(device), notices_(notices) {}

  // Seconds of the median of kRepeats runs of `schedule` on this rank,
  // over `over` (null: the plan's transport, made on first use).
  double seconds(const plan::Schedule& schedule, const Problem& problem, transport::Transport* over = nullptr) {
    std::shared_ptr<exec::ComputeBackend> backend = make_backend(schedule, problem);
    // MPI's and NCCL's transports do not depend on the schedule they run:
    // one serves every calibration schedule.
    if (!over && !transport_) {
      const transport::TransportContext context{grid_, group_, problem, schedule, resolved_, backend->workspace()};
      transport_ = transport::transport_row(resolved_.transport).make(context);
    }
    transport::Transport& transport = over ? *over : *transport_;
    return executes_seconds(schedule, backend, transport, exec::Progress::Tiles, "weave_plan_create (calibration)",
                            {});
  }

  // A plan's own schedule, as `resolved` says, on `backend` over
  // `transport` (make_backend, make_transport), bound to `user` (the
  // caller's buffers: A, B, C, ...): the median of `repeats` executes after
  // a warm-up.
  double plan_seconds(const plan::Schedule& schedule, const plan::Resolved& resolved, const UserBuffers& user,
                      const std::shared_ptr<exec::ComputeBackend>& backend, transport::Transport& transport,
                      int repeats) {
    const exec::Progress progress =
        resolved.progress == plan::ProgressMode::Thread ? exec::Progress::Thread : exec::Progress::Tiles;
    return executes_seconds(schedule, backend, transport, progress,
                            "weave_plan_create (timing the model's candidates)", user, repeats);
  }

  // The backend and its workspace for `schedule`, made on every rank of the
  // group or on none: a rank whose allocation failed alone would leave the
  // others waiting in the first transfer until the timeout. Where it failed
  // on some rank, every rank throws that rank's error.
  std::shared_ptr<exec::ComputeBackend> make_backend(const plan::Schedule& schedule, const Problem& problem) const {
    std::shared_ptr<exec::ComputeBackend> backend;
    agree_on_errors(*group_.channel, [&] { backend = make_local_backend(schedule, problem); },
                    "the agreement on the calibration's buffers");
    return backend;
  }

  // The transport a plan asking for `resolved` would make, made on every
  // rank or on none (as make_backend): a transport refuses at creation
  // what it cannot move (MPI: sums of 16-bit partial sums), which building
  // the candidate's schedule does not see.
  std::unique_ptr<transport::Transport> make_transport(const plan::Schedule& schedule, const Problem& problem,
                                                       const plan::Resolved& resolved,
                                                       const std::shared_ptr<exec::ComputeBackend>& backend) {
    std::unique_ptr<transport::Transport> transport;
    agree_on_errors(
        *group_.channel,
        [&] {
          const transport::TransportContext context{grid_, group_, problem, schedule, resolved, backend->workspace()};
          transport = transport::transport_row(resolved.transport).make(context);
        },
        "the agreement on the trials' transports");
    return transport;
  }

  // Host only: the median seconds of the GEMM step of `schedule` cut into
  // the tiles the executor asks for while transfers are in flight.
  double tiled_gemm_seconds(const plan::Schedule& schedule, const Problem& problem) {
    std::shared_ptr<exec::ComputeBackend> backend = make_backend(schedule, problem);
    exec::Bindings bindings;
    bindings.schedule = &schedule;
    bindings.workspace = backend->workspace();
    const exec::Scalars scalars{1.0, 0.0};
    exec::ProgressHook in_flight;
    in_flight.call = [] { return true; };
    in_flight.transfers_in_flight = true;
    const auto& gemm = std::get<plan::GemmOp>(schedule.steps.at(0).op);
    return timed([&] { backend->gemm(gemm, 0, bindings, scalars, in_flight); });
  }

 private:
  // The median seconds of executes of `schedule` (timed()).
  double executes_seconds(const plan::Schedule& schedule, const std::shared_ptr<exec::ComputeBackend>& backend,
                          transport::Transport& transport, exec::Progress progress, const char* call,
                          const UserBuffers& user, int repeats = kRepeats) {
    exec::ExecutorOptions options;
    options.progress = progress;
    options.bounds = bounds_;
    options.notices = notices_;
    options.call = call;
    options.workspace_owner = backend;
    exec::Executor executor(schedule, *backend, transport, options);
    exec::Bindings bindings;
    bindings.schedule = &schedule;
    bindings.user = user;
    bindings.workspace = backend->workspace();
    const exec::Scalars scalars{1.0, 0.0};
    bindings.scalars = scalars;
    return timed(
        [&] {
          if (notices_) notices_->enter(notices_->call() + 1);
          executor.run(bindings, scalars, nullptr);
          if (device_) cuda::synchronize(nullptr);
        },
        repeats);
  }

  std::shared_ptr<exec::ComputeBackend> make_local_backend(const plan::Schedule& schedule,
                                                           const Problem& problem) const {
    std::shared_ptr<exec::ComputeBackend> backend;
    if (device_) {
      backend = cuda::make_cuda_backend(schedule, problem, cuda::CudaBackendOptions{});
      if (schedule.workspace_bytes > 0)
        cuda::fill_device_bytes(backend->workspace(), kFillByte, static_cast<std::size_t>(schedule.workspace_bytes));
    } else {
      backend = std::make_shared<host::HostBackend>(schedule, host::HostBackendOptions{});
      if (schedule.workspace_bytes > 0)
        std::memset(backend->workspace(), kFillByte, static_cast<std::size_t>(schedule.workspace_bytes));
    }
    return backend;
  }

  // One warm-up run, then the median of `repeats`.
  static double timed(const std::function<void()>& run, int repeats = kRepeats) {
    run();
    std::vector<double> times;
    for (int repeat = 0; repeat < repeats; ++repeat) {
      const auto start = std::chrono::steady_clock::now();
      run();
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return median(times);
  }

  GridState& grid_;
  const GroupView& group_;
  const plan::Resolved& resolved_;
  WaitBounds bounds_;
  bool device_;
  ArrivalNotices* notices_;
  std::unique_ptr<transport::Transport> transport_;
};

// Rows cut unevenly enough to time their all-gather apart: the largest
// part more than 2% above an even one (a balanced split's parts differ by
// one row at most).
bool uneven(const Split& rows) {
  const int parts = rows.parts();
  if (parts < 2 || rows.total() <= 0) return false;
  return static_cast<double>(rows.max_count()) * parts > 1.02 * static_cast<double>(rows.total());
}

int64_t capped(int64_t dimension, int64_t cap) { return dimension <= 0 ? cap : std::min(dimension, cap); }

int64_t elements(double bytes, DType type) {
  return std::max<int64_t>(1, static_cast<int64_t>(bytes / static_cast<double>(dtype_size(type))));
}

// The slowest rank's times, on every rank (bounded like every collective
// of the group's channel).
std::vector<double> slowest(const GroupView& group, const std::vector<double>& times) {
  auto all = std::make_shared<std::vector<double>>(times);
  group.channel->collective(
      [&](MPI_Request* request) {
        return MPI_Iallreduce(MPI_IN_PLACE, all->data(), static_cast<int>(all->size()), MPI_DOUBLE, MPI_MAX,
                              group.channel->comm(), request);
      },
      all, "the calibration's times");
  return *all;
}

// The links: a point-to-point exchange and each collective at two sizes,
// and for several nodes of several ranks exchanges within and between nodes.
std::shared_ptr<plan::Calibration> measure_links(Runner& runner, const GroupView& group, const Problem& p,
                                                 const NodeLayout& nodes, double large,
                                                 const std::vector<int64_t>& uneven_rows) {
  const int P = group.size, r = group.rank;
  const DType type = p.dtype, summed = accumulation_type(p.dtype);
  const double sizes[] = {large * kSmallFraction, large};
  std::vector<double> times;
  auto exchange = [&](int to, int from) {
    for (double bytes : sizes)
      times.push_back(runner.seconds(plan::exchange_calibration(p, to, from, elements(bytes, type)), p));
  };
  exchange((r + 1) % P, (r - 1 + P) % P);
  for (plan::CollectiveKind kind :
       {plan::CollectiveKind::AllGather, plan::CollectiveKind::ReduceScatter, plan::CollectiveKind::AllReduce}) {
    const DType moved = kind == plan::CollectiveKind::AllGather ? type : summed;
    // The all-gather in the plan's uneven proportions where it has them
    // (the model's sequential AG-GEMM); the reduce-scatter's rate stays
    // that of equal parts, which the reductions' rule across nodes reads.
    const std::vector<int64_t> weights =
        kind == plan::CollectiveKind::AllGather ? uneven_rows : std::vector<int64_t>{};
    for (double bytes : sizes)
      times.push_back(runner.seconds(
          plan::collective_calibration(p, kind, elements(bytes, moved) / P * P, moved, weights), p));
  }
  const int L = nodes.ranks_per_node(), N = nodes.nodes;
  const bool levels = N > 1 && L > 1 && static_cast<int>(nodes.node_of_rank.size()) == P;
  if (levels) {
    std::vector<std::vector<int>> members(static_cast<std::size_t>(N));
    for (int q = 0; q < P; ++q)
      members[static_cast<std::size_t>(nodes.node_of_rank[static_cast<std::size_t>(q)])].push_back(q);
    const int node = nodes.node_of_rank[static_cast<std::size_t>(r)];
    const auto& mine = members[static_cast<std::size_t>(node)];
    const int local = static_cast<int>(std::find(mine.begin(), mine.end(), r) - mine.begin());
    const plan::ExchangePartners within{mine[static_cast<std::size_t>((local + 1) % L)],
                                        mine[static_cast<std::size_t>((local - 1 + L) % L)]};
    const plan::ExchangePartners between{members[static_cast<std::size_t>((node + 1) % N)][static_cast<std::size_t>(local)],
                                         members[static_cast<std::size_t>((node - 1 + N) % N)][static_cast<std::size_t>(local)]};
    exchange(within.send_to, within.receive_from);
    exchange(between.send_to, between.receive_from);
    // Both at once, at the larger size: whether they share a path (nodes
    // emulated on one host through host memory do; NVLink within and a
    // network between do not).
    times.push_back(runner.seconds(plan::concurrent_exchange_calibration(p, within, between, elements(large, type)), p));
  }
  const std::vector<double> t = slowest(group, times);
  auto calibration = std::make_shared<plan::Calibration>();
  auto fit = [&](std::size_t at) { return plan::LinkCost::fit(sizes[0], t[at], sizes[1], t[at + 1]); };
  calibration->point_to_point = fit(0);
  calibration->all_gather = fit(2);
  calibration->reduce_scatter = fit(4);
  calibration->all_reduce = fit(6);
  calibration->uneven_all_gather = !uneven_rows.empty();
  if (levels) {
    calibration->levels = true;
    calibration->within_node = fit(8);
    calibration->between_nodes = fit(10);
    calibration->levels_shared = plan::shared_path_fraction(t[9], t[11], t[12]);
  }
  return calibration;
}

// The bytes of a caller's buffer as `spec` lays it out (0: empty).
int64_t buffer_bytes(const plan::BufferSpec& spec) {
  if (spec.rows <= 0 || spec.cols <= 0) return 0;
  const int64_t lines = spec.order == Order::ColMajor ? spec.cols : spec.rows;
  return checked_mul(checked_mul(spec.ld, lines, "elements of the trial's ", spec.name),
                     static_cast<int64_t>(dtype_size(spec.dtype)), "bytes of the trial's ", spec.name);
}

// Which of `values` are the same on every rank of the group: one
// collective, the maximum of each value and of its negation.
std::vector<bool> same_on_every_rank(const GroupView& group, const std::vector<double>& values) {
  const std::size_t n = values.size();
  std::vector<double> both(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    both[i] = values[i];
    both[n + i] = -values[i];
  }
  const std::vector<double> most = slowest(group, both);
  std::vector<bool> same(n);
  for (std::size_t i = 0; i < n; ++i) same[i] = most[i] == -most[n + i];
  return same;
}

// Runs `step`, whose failures are agreed on by the group (thrown on every
// rank or on none), and returns its error's message, or nothing where it
// succeeded. A timeout is not a step that failed alike everywhere: it goes on.
std::optional<std::string> agreed_failure(const std::function<void()>& step) {
  try {
    step();
  } catch (const Error& e) {
    if (e.status() == WEAVE_ERROR_TIMEOUT) throw;
    return std::string(e.what());
  }
  return std::nullopt;
}

// What a candidate resolved to, as numbers every rank must share for its
// trial to run (the fields a plan's creation checks alike on every rank),
// the first saying whether it could be built at all.
constexpr std::size_t kResolvedFields = 11;
std::array<double, kResolvedFields> resolved_fields(const plan::Resolved& r) {
  const plan::ScheduleOptions& o = r.schedule;
  return {1.0,
          static_cast<double>(o.algorithm),        static_cast<double>(r.backend),
          static_cast<double>(r.transport),        static_cast<double>(o.direction),
          static_cast<double>(o.chunks_per_shard), static_cast<double>(o.compute_lanes),
          o.peer_sums ? 1.0 : 0.0,                 o.all_reduce_one_shot ? 1.0 : 0.0,
          static_cast<double>(o.gemm_bands),       static_cast<double>(o.panel_width)};
}

// Whether every rank of the group has the same candidates to time (the
// model's inputs are the slowest rank's measurements, so they should; a
// rank whose machine reports other cores would differ).
bool same_candidates(const GroupView& group, const std::vector<plan::Candidate>& candidates) {
  std::vector<double> codes(plan::kMaxTimedCandidates + 1, -1.0);
  codes[0] = static_cast<double>(candidates.size());
  for (std::size_t i = 0; i < candidates.size() && i < static_cast<std::size_t>(plan::kMaxTimedCandidates); ++i)
    codes[i + 1] = static_cast<double>(static_cast<int>(candidates[i].algorithm) * 100000 + candidates[i].chunks);
  const std::vector<bool> same = same_on_every_rank(group, codes);
  return std::all_of(same.begin(), same.end(), [](bool b) { return b; });
}

}  // namespace

bool any_rank_of_grid(GridState& grid, bool mine) {
  auto flag = std::make_shared<int>(mine ? 1 : 0);
  grid.channel().collective(
      [&](MPI_Request* request) {
        return MPI_Iallreduce(MPI_IN_PLACE, flag.get(), 1, MPI_INT, MPI_MAX, grid.channel().comm(), request);
      },
      flag, "whether any rank times candidates");
  return *flag != 0;
}

std::shared_ptr<const plan::Capabilities::Trials> time_trials(GridState& grid, const GroupView& group,
                                                              const Problem& problem, const weave_plan_desc_t& desc,
                                                              const plan::Environment& env,
                                                              const plan::Capabilities& caps,
                                                              const std::vector<plan::Candidate>& candidates,
                                                              const WaitBounds& bounds) {
  auto trials = std::make_shared<plan::Capabilities::Trials>();
  // Every rank of the group comes here (a rank with nothing to time too):
  // the group agrees first on what it times.
  if (!same_candidates(group, candidates)) {
    trials->not_timed = "the ranks' models named different candidates";
    return trials;
  }
  if (candidates.empty()) return nullptr;
  // Each candidate as a plan asking for it would run, resolved and built
  // alike on every rank, or left out on every rank: the model may predict
  // a candidate no plan can run (chunks that cut FP8 blocks of scales), or
  // one that resolves differently on some rank (which a plan's creation
  // refuses).
  const std::size_t n = candidates.size();
  std::vector<std::optional<plan::Resolved>> resolved_of(n);
  std::vector<std::optional<plan::Schedule>> schedule_of(n);
  std::vector<double> codes(n * kResolvedFields, 0.0);  // a candidate not built: all zero
  for (std::size_t i = 0; i < n; ++i) {
    const plan::Candidate& c = candidates[i];
    weave_plan_desc_t asked = desc;
    asked.algorithm = static_cast<weave_algorithm_t>(static_cast<int>(c.algorithm));
    asked.chunks_per_shard = c.algorithm == plan::Algorithm::Sequential ? 0 : c.chunks;
    try {
      resolved_of[i] = plan::resolve_options(asked, problem, env, caps);
      schedule_of[i] = plan::build_schedule(problem, resolved_of[i]->schedule);
      plan::require_one_call_gemms(*schedule_of[i]);
      const std::array<double, kResolvedFields> fields = resolved_fields(*resolved_of[i]);
      std::copy(fields.begin(), fields.end(), codes.begin() + static_cast<std::ptrdiff_t>(i * kResolvedFields));
    } catch (const Error&) {
      resolved_of[i].reset();
      schedule_of[i].reset();
    }
  }
  const std::vector<bool> same = same_on_every_rank(group, codes);
  std::vector<plan::Candidate> runnable;
  std::vector<plan::Resolved> resolved;
  std::vector<plan::Schedule> schedules;
  for (std::size_t i = 0; i < n; ++i) {
    // Built here, and every field alike everywhere (so built everywhere).
    const auto first = same.begin() + static_cast<std::ptrdiff_t>(i * kResolvedFields);
    if (!resolved_of[i] || !std::all_of(first, first + kResolvedFields, [](bool b) { return b; })) continue;
    runnable.push_back(candidates[i]);
    resolved.push_back(*resolved_of[i]);
    schedules.push_back(*schedule_of[i]);
  }
  if (runnable.size() < 2) {
    trials->not_timed = "fewer than two of them can be built alike on every rank";
    return trials;
  }
  // The caller's buffers, as large as the plan's (the same for every
  // candidate), filled like the calibration's workspace.
  int64_t total = 0;
  std::array<int64_t, plan::kFirstWorkspaceBuffer> sizes{};
  for (int b = 0; b < plan::kFirstWorkspaceBuffer; ++b) {
    for (const plan::Schedule& s : schedules)
      if (b < static_cast<int>(s.buffers.size()))
        sizes[static_cast<std::size_t>(b)] = std::max(sizes[static_cast<std::size_t>(b)], buffer_bytes(s.buffers[static_cast<std::size_t>(b)]));
    total = checked_add(total, sizes[static_cast<std::size_t>(b)], "bytes of the trial's buffers");
  }
  // Over this (and, on a GPU, over a quarter of its free memory) the trials
  // would need more memory than a plan should take unasked at creation.
  const bool device = problem.memory == Memory::Device;
  constexpr int64_t kTrialMaxBytes = int64_t{2} << 30;
  int64_t limit = kTrialMaxBytes;
  if (device) limit = std::min<int64_t>(limit, static_cast<int64_t>(cuda::free_device_bytes() / 4));
  std::vector<double> too_large{total > limit ? 1.0 : 0.0};
  if (slowest(group, too_large)[0] > 0) {
    trials->not_timed = str("their buffers would take more than ", kTrialMaxBytes >> 20, " MiB",
                            device ? " or a quarter of the GPU's free memory" : "", " on some rank");
    return trials;
  }
  // Allocated on every rank or timed on none: a rank whose allocation
  // failed alone would leave the others waiting in the trials' transfers.
  std::vector<std::shared_ptr<void>> storage;
  UserBuffers user{};
  const std::optional<std::string> no_buffers = agreed_failure([&] {
    agree_on_errors(
        *group.channel,
        [&] {
          for (int b = 0; b < plan::kFirstWorkspaceBuffer; ++b) {
            const auto bytes = static_cast<std::size_t>(std::max<int64_t>(sizes[static_cast<std::size_t>(b)], 256));
            if (device) {
              storage.push_back(cuda::allocate_device_bytes(bytes));
              cuda::fill_device_bytes(storage.back().get(), kFillByte, bytes);
            } else {
              storage.push_back(std::shared_ptr<void>(new std::byte[bytes], std::default_delete<std::byte[]>()));
              std::memset(storage.back().get(), kFillByte, bytes);
            }
            user[static_cast<std::size_t>(b)] = storage.back().get();
          }
        },
        "the agreement on the trials' buffers");
  });
  if (no_buffers) {
    trials->not_timed = str("their scratch buffers could not be allocated (", *no_buffers, ")");
    return trials;
  }
  // How often each candidate runs, from its prediction, alike on every rank
  // (each run is collective): the slowest rank's prediction decides.
  std::vector<double> predicted;
  for (const plan::Candidate& c : runnable) predicted.push_back(c.seconds);
  predicted = slowest(group, predicted);
  ArrivalNotices notices(duplicate(*group.channel));
  // A candidate whose workspace cannot be allocated beside the scratch
  // buffers on some rank is left out on every rank (the allocation is
  // agreed on); the others are timed.
  std::vector<double> times;
  std::vector<plan::Candidate> timed;
  for (std::size_t i = 0; i < runnable.size(); ++i) {
    Runner runner(grid, group, resolved[i], bounds, device, &notices);
    std::shared_ptr<exec::ComputeBackend> backend;
    std::unique_ptr<transport::Transport> transport;
    const char* why = "its workspace could not be allocated beside the trials' buffers";
    std::optional<std::string> failed = agreed_failure([&] { backend = runner.make_backend(schedules[i], problem); });
    if (!failed) {
      why = "its transport refused it";
      failed = agreed_failure([&] { transport = runner.make_transport(schedules[i], problem, resolved[i], backend); });
    }
    if (failed) {
      trials->left_out += str(trials->left_out.empty() ? "" : "; ", plan::candidate_name(runnable[i]), " not timed: ",
                              why, " (", *failed, ")");
      continue;
    }
    times.push_back(runner.plan_seconds(schedules[i], resolved[i], user, backend, *transport,
                                        plan::trial_repeats(predicted[i])));
    timed.push_back(runnable[i]);
  }
  if (timed.size() < 2) {
    trials->not_timed = trials->left_out.empty() ? "fewer than two of them could be timed" : trials->left_out;
    trials->left_out.clear();
    return trials;
  }
  const std::vector<double> t = slowest(group, times);
  for (std::size_t i = 0; i < timed.size(); ++i) {
    plan::Candidate measured = timed[i];
    measured.seconds = t[i];
    trials->measured.push_back(measured);
  }
  return trials;
}

std::shared_ptr<const plan::Calibration> calibrate(GridState& grid, const GroupView& group, const Problem& problem,
                                                   const plan::Resolved& resolved, const NodeLayout& nodes,
                                                   const WaitBounds& bounds) {
  const bool device = resolved.backend == plan::Backend::Cuda;
  const Problem p = plan::calibration_problem(group.size, group.rank, problem.dtype,
                                              device ? Memory::Device : Memory::Host);
  ArrivalNotices notices(duplicate(*group.channel));
  Runner runner(grid, group, resolved, bounds, device, &notices);
  const std::string what = str("group ", static_cast<int>(group.kind), " over ", static_cast<int>(resolved.transport),
                               " on ", plan::backend_name(resolved.backend), " in ", dtype_name(problem.dtype));
  // The links once per grid, group, transport, backend, type and size
  // (measured outside the cache's lock: making a transport may use the
  // cache).
  const double large = plan_bytes(problem, device);
  // A plan whose rows are cut unevenly has the all-gather timed with parts
  // in the same proportions (and cached apart from even ones): over
  // sockets Weave's sequential AG-GEMM of 8192 uneven rows took 1.5 x as
  // long as of the same bytes in equal parts, which the model, timing
  // equal parts, did not see.
  std::vector<int64_t> uneven_rows;
  if (problem.operation == Operation::AgGemm && uneven(problem.m_split)) uneven_rows = problem.m_split.counts();
  std::string links_key = str("calibrated links at ", large, " bytes of ", what);
  if (!uneven_rows.empty()) {
    links_key += " with rows";
    for (int64_t rows : uneven_rows) links_key += str(" ", rows);
  }
  auto links = std::static_pointer_cast<plan::Calibration>(grid.find_cached(links_key));
  if (!links) {
    std::shared_ptr<void> measured = measure_links(runner, group, p, nodes, large, uneven_rows);
    links = std::static_pointer_cast<plan::Calibration>(grid.cached(links_key, [&] { return measured; }));
  }
  // The GEMM at the plan's shape, each dimension capped, once per shape.
  const int64_t cap = device ? kDeviceGemmCap : kHostGemmCap;
  const bool ag = problem.operation == Operation::AgGemm;
  const int64_t m = capped(problem.m, cap), n = capped(ag ? problem.n_split.max_count() : problem.n, cap),
                k = capped(ag ? problem.k : problem.k_split.max_count(), cap);
  // Alone, and on the host also in the tiles it runs in beside transfers.
  auto rates = std::static_pointer_cast<std::vector<double>>(
      grid.cached(str("calibrated GEMM ", m, "x", n, "x", k, " of ", what), [&] {
        NoTransport none;
        const plan::Schedule gemm = plan::gemm_calibration(p, m, n, k);
        std::vector<double> times{runner.seconds(gemm, p, &none)};
        if (!device) times.push_back(runner.tiled_gemm_seconds(gemm, p));
        const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
        auto per_second = std::make_shared<std::vector<double>>();
        for (double seconds : slowest(group, times)) per_second->push_back(flops / seconds);
        return per_second;
      }));
  auto calibration = std::make_shared<plan::Calibration>(*links);
  calibration->gemm_flops_per_s = rates->at(0);
  if (rates->size() > 1) calibration->overlapped_gemm_flops_per_s = rates->at(1);
  return calibration;
}

}  // namespace weave::internal
