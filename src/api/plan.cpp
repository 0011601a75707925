#include "api/plan.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include "api/buffer_overlap.hpp"
#include "api/calibration.hpp"
#include "api/execute_log.hpp"
#include "api/handles.hpp"
#include "api/live_handles.hpp"
#include "api/struct_size.hpp"
#include "backends/cuda/cuda_entry.hpp"
#include "backends/host/host_backend.hpp"
#include "core/checked.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "core/mpi_check.hpp"
#include "plan/wire.hpp"
#include "transport/registry.hpp"
#include "weave_features.h"

namespace weave::internal {

namespace {

// Hardware threads of this node per rank on it. Collective over `comm`.
double cores_per_rank(MPI_Comm comm) {
  return static_cast<double>(std::max(1u, std::thread::hardware_concurrency())) / std::max(1, ranks_on_my_node(comm));
}

plan::Capabilities capabilities() {
  plan::Capabilities caps;
  caps.cuda = WEAVE_HAVE_CUDA;
  caps.transports = transport::transport_descriptions();
  MPI_Query_thread(&caps.mpi_thread_level);
  return caps;
}

const MatrixDesc& matrix_of(weave_matrix_t m, const char* name) {
  require_live(m, str("plan descriptor field ", name).c_str());
  return m->desc;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 10 * 1024) return str(bytes, " B");
  if (bytes < 10 * 1024 * 1024) return str(bytes / 1024, " KiB");
  return str(bytes / (1024 * 1024), " MiB");
}

// What every rank of the grid passes identically (the per-group problem is
// checked within each group).
// (Weave's environment, WEAVE_TRANSPORT among it: check_same_environment.)
std::vector<Argument> grid_fields(const weave_plan_desc_t& desc) {
  return {{"operation", enum_value(desc.operation)},
          {"group", enum_value(desc.group)},
          {"op_a", enum_value(desc.op_a)},
          {"op_b", enum_value(desc.op_b)},
          {"bias present", desc.bias ? 1 : 0},
          {"algorithm", enum_value(desc.algorithm)},
          {"backend", enum_value(desc.backend)},
          {"transport", enum_value(desc.transport)},
          {"direction", enum_value(desc.direction)},
          {"chunks_per_shard", desc.chunks_per_shard},
          {"compute_streams", desc.compute_streams},
          {"progress", enum_value(desc.progress)},
          {"flags", desc.flags},
          {"wire_type", enum_value(desc.wire_type)}};
}

// Weave's environment variables that shape what the ranks plan, calibrate
// and exchange must be set alike on every rank of the grid: a rank that
// forced another algorithm, transport or calibration would plan apart from
// its peers and leave them waiting in a collective it never joins.
// WEAVE_PROGRESS and WEAVE_TIMEOUT are each rank's own. Every rank sees every
// rank's settings, so all of them raise the same error.
void check_same_environment(AgreementChannel& channel, const plan::Environment& env, const std::string& context) {
  auto per_rank = [](const std::string& name) { return name == "WEAVE_PROGRESS" || name == "WEAVE_TIMEOUT"; };
  std::string mine;
  for (const auto& [name, value] : env)
    if (!per_rank(name)) mine += name + "=" + value + "\n";
  std::vector<int> offsets;
  const std::vector<char> all = all_gather_bytes(channel, std::vector<char>(mine.begin(), mine.end()), &offsets);
  auto settings_of = [&](int rank) {
    std::map<std::string, std::string> settings;
    const std::string text(all.begin() + offsets[static_cast<std::size_t>(rank)],
                           all.begin() + offsets[static_cast<std::size_t>(rank) + 1]);
    std::size_t start = 0;
    for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
      const std::string line = text.substr(start, end - start);
      const std::size_t equals = line.find('=');
      settings[line.substr(0, equals)] = line.substr(equals + 1);
    }
    return settings;
  };
  auto shown = [](const std::map<std::string, std::string>& settings, const std::string& name) {
    const auto found = settings.find(name);
    return found == settings.end() ? std::string("unset") : "'" + found->second + "'";
  };
  const std::map<std::string, std::string> first = settings_of(0);
  for (int rank = 1; rank < channel.size(); ++rank) {
    const std::map<std::string, std::string> other = settings_of(rank);
    if (other == first) continue;
    std::map<std::string, std::string> names = first;
    names.insert(other.begin(), other.end());
    for (const auto& entry : names)
      if (shown(first, entry.first) != shown(other, entry.first))
        fail(WEAVE_ERROR_RANK_MISMATCH, context, ": ", entry.first, " is ", shown(first, entry.first),
             " on rank 0 but ", shown(other, entry.first), " on rank ", rank,
             "; every rank must set Weave's environment variables alike (WEAVE_PROGRESS and WEAVE_TIMEOUT may "
             "differ)");
  }
}

// An execute's scalars as the agreement compares them: their bits, with
// -0 taken as 0.
std::vector<Argument> scalar_fields(const weave_execute_args_t& args) {
  auto bits = [](double x) {
    if (x == 0) x = 0;
    int64_t b = 0;
    std::memcpy(&b, &x, sizeof b);
    return b;
  };
  constexpr auto kDouble = Argument::Shown::DoubleBits;
  return {{"alpha", bits(args.alpha), kDouble},
          {"alpha_imag", bits(args.alpha_imag), kDouble},
          {"beta", bits(args.beta), kDouble},
          {"beta_imag", bits(args.beta_imag), kDouble}};
}

// The automatic choices, which every rank of a group must have resolved
// alike (environment variables could differ between ranks). The host
// progress mechanism is each rank's own business and may differ.
std::vector<Argument> resolved_fields(const plan::Resolved& r) {
  return {{"algorithm (resolved)", static_cast<int64_t>(r.schedule.algorithm)},
          {"backend (resolved)", static_cast<int64_t>(r.backend)},
          {"transport (resolved)", static_cast<int64_t>(r.transport)},
          {"direction (resolved)", static_cast<int64_t>(r.schedule.direction)},
          {"chunks_per_shard (resolved)", r.schedule.chunks_per_shard},
          {"compute_streams (resolved)", r.schedule.compute_lanes},
          {"sums read from peers (resolved)", r.schedule.peer_sums ? 1 : 0},
          {"one-shot all-reduce (resolved, WEAVE_ALL_REDUCE)", r.schedule.all_reduce_one_shot ? 1 : 0},
          {"bands of C (resolved, WEAVE_GEMM_BANDS)", r.schedule.gemm_bands},
          {"panel width (resolved, WEAVE_PANEL_WIDTH)", r.schedule.panel_width}};
}

}  // namespace

std::unique_ptr<Plan> Plan::create(const std::shared_ptr<GridState>& grid, const weave_plan_desc_t& desc) {
  std::unique_ptr<Plan> plan(new Plan());
  plan->grid_ = grid;
  const plan::Environment env = plan::read_environment();

  // 1. Local validation; no communication, so a rank that fails early cannot
  //    leave the others inside a collective.
  agree_on_errors(grid->channel(), [&] {
    plan->bounds_ = wait_bounds(desc.timeout_ms);
    const int operation = enum_value(desc.operation), op_a = enum_value(desc.op_a), op_b = enum_value(desc.op_b);
    if (operation < WEAVE_AG_GEMM || operation > WEAVE_GEMM)
      fail(WEAVE_ERROR_INVALID_VALUE, "operation = ", operation, operation == 0 ? " (not set)" : "",
           " is not WEAVE_AG_GEMM, WEAVE_GEMM_RS, WEAVE_GEMM_AR or WEAVE_GEMM");
    if (op_a != WEAVE_OP_N && op_a != WEAVE_OP_T && op_a != WEAVE_OP_C)
      fail(WEAVE_ERROR_INVALID_VALUE, "op_a = ", op_a, " is not WEAVE_OP_N, WEAVE_OP_T or WEAVE_OP_C");
    if (op_b != WEAVE_OP_N && op_b != WEAVE_OP_T && op_b != WEAVE_OP_C)
      fail(WEAVE_ERROR_INVALID_VALUE, "op_b = ", op_b, " is not WEAVE_OP_N, WEAVE_OP_T or WEAVE_OP_C");
    plan::check_option_values(desc, static_cast<Operation>(operation));
    plan->group_ = grid->group(enum_value(desc.group));
    const MatrixDesc& a = matrix_of(desc.a, "a");
    const MatrixDesc& b = matrix_of(desc.b, "b");
    const MatrixDesc& c = matrix_of(desc.c, "c");
    const MatrixDesc* bias = desc.bias ? &matrix_of(desc.bias, "bias") : nullptr;
    plan->problem_ = make_problem(*grid, static_cast<Operation>(operation), plan->group_.kind, static_cast<Op>(op_a),
                                  static_cast<Op>(op_b), a, b, c, bias, enum_value(desc.wire_type));
  });

  // 2. Every rank of the grid passed the same operation, and every rank of a
  //    group the same problem.
  agree_on_errors(grid->channel(), [&] {
    check_same_environment(grid->channel(), env, "weave_plan_create");
    check_same_on_all_ranks(grid->channel(), grid_fields(desc), "weave_plan_create");
    check_same_on_all_ranks(*plan->group_.channel, plan->problem_.agreement_fields(), "weave_plan_create");
  });

  // 3. Where the topology matters (the transport of a device plan left to
  //    Weave), find it out together; then plan locally, and check that every
  //    rank of the group resolved the same choices.
  plan::Capabilities caps = capabilities();
  // Cores per rank do not change while a grid lives: found once per grid.
  agree_on_errors(grid->channel(), [&] {
    caps.cores_per_rank = *std::static_pointer_cast<double>(
        grid->cached("cores per rank", [&] { return std::make_shared<double>(cores_per_rank(grid->comm())); }));
  });
  // Which node each rank of the group is on, found once per grid and group
  // (WEAVE_NODE is read then).
  agree_on_errors(grid->channel(), [&] {
    caps.nodes = *std::static_pointer_cast<NodeLayout>(
        grid->cached(str("nodes of group ", enum_value(desc.group)),
                     [&] { return std::make_shared<NodeLayout>(node_layout(plan->group_.comm)); }));
  });
  // The transports that reach only the GPUs of one node share one probe,
  // run when a device plan leaves its transport to Weave and such a
  // transport is built and could be chosen.
  const bool transport_from_env = env.count("WEAVE_TRANSPORT") > 0;
  if (plan->problem_.memory == Memory::Device && enum_value(desc.transport) == WEAVE_TRANSPORT_AUTO &&
      !transport_from_env)
    for (const transport::TransportRow& row : transport::transport_table()) {
      const plan::TransportDescription& t = row.description;
      if (!t.automatic || !t.compiled || t.reach != plan::Reach::OneNodePeerAccess || !row.probe) continue;
      agree_on_errors(grid->channel(), [&] { caps.peer_access = row.probe(plan->group_, &caps.peer_access_why_not); });
      break;
    }
  agree_on_errors(grid->channel(), [&] { plan->resolved_ = plan::resolve_options(desc, plan->problem_, env, caps); });
  // Where the model chooses the algorithm, it needs the calibration of this
  // group, transport, backend and element type (the links measured once per
  // grid, the GEMM once per shape; every rank of the group wants it alike,
  // as the model applies alike), then the choices are resolved again.
  if (plan->resolved_.wants_calibration) {
    agree_on_errors(grid->channel(), [&] {
      caps.calibration = calibrate(*grid, plan->group_, plan->problem_, plan->resolved_, caps.nodes, plan->bounds_);
    });
    agree_on_errors(grid->channel(), [&] { plan->resolved_ = plan::resolve_options(desc, plan->problem_, env, caps); });
  }
  // Where the model's closest candidates are too close for it to tell
  // apart, the plan times them and resolves once more. The groups of a 2-D
  // grid decide apart, so every rank of the grid takes part in these steps
  // when any rank times (a group with nothing to time passes through).
  bool any_trials = false;
  agree_on_errors(grid->channel(),
                  [&] { any_trials = any_rank_of_grid(*grid, !plan->resolved_.wants_trials.empty()); });
  if (any_trials) {
    agree_on_errors(grid->channel(), [&] {
      caps.trials = time_trials(*grid, plan->group_, plan->problem_, desc, env, caps, plan->resolved_.wants_trials,
                                plan->bounds_);
    });
    agree_on_errors(grid->channel(), [&] {
      if (caps.trials) plan->resolved_ = plan::resolve_options(desc, plan->problem_, env, caps);
    });
  }
  agree_on_errors(grid->channel(), [&] {
    plan->schedule_ = plan::build_schedule(plan->problem_, plan->resolved_.schedule);
    // WEAVE_LOG and WEAVE_TRACE time every execute: as WEAVE_FLAG_TRACE does.
    plan->log_ = log_settings();
    if (plan->log_.timing_wanted()) plan->resolved_.flags |= WEAVE_FLAG_TRACE;
    plan::require_one_call_gemms(plan->schedule_);
  });
  agree_on_errors(grid->channel(), [&] {
    check_same_on_all_ranks(*plan->group_.channel, resolved_fields(plan->resolved_), "weave_plan_create");
  });

  // 4. Backend (workspace) and transport. Creating a transport is collective
  //    over the group; every rank gets here.
  agree_on_errors(grid->channel(), [&] {
    const plan::Resolved& r = plan->resolved_;
    if (r.backend == plan::Backend::Cuda) {
      cuda::CudaBackendOptions options;
      options.allow_tf32 = (r.flags & WEAVE_FLAG_ALLOW_TF32) != 0;
      options.trace = (r.flags & WEAVE_FLAG_TRACE) != 0;
      options.comm_high_priority = r.comm_high_priority;
      options.gemm_sm_margin = r.gemm_sm_margin;
      options.gemm_tuning = r.gemm_tuning;
      options.cutlass_fp8 = r.cutlass_fp8_gemm;
      options.cutlass_swizzle = r.cutlass_swizzle;
      plan->backend_ = cuda::make_cuda_backend(plan->schedule_, plan->problem_, options);
    } else {
      plan->backend_ = std::make_shared<host::HostBackend>(plan->schedule_, host::HostBackendOptions{});
    }
  });
  agree_on_errors(grid->channel(), [&] {
    const transport::TransportContext context{*grid,           plan->group_,      plan->problem_,
                                              plan->schedule_, plan->resolved_, plan->backend_->workspace()};
    plan->transport_ = transport::transport_row(plan->resolved_.transport).make(context);
  });

  agree_on_errors(grid->channel(), [&] {
    auto notices = std::make_unique<ArrivalNotices>(duplicate(*plan->group_.channel));
    plan->channel_ = std::make_unique<AgreementChannel>(duplicate(*plan->group_.channel), std::move(notices), "plan",
                                                        "group rank");
  });

  exec::ExecutorOptions options;
  options.progress = plan->resolved_.progress == plan::ProgressMode::Thread ? exec::Progress::Thread : exec::Progress::Tiles;
  options.bounds = plan->bounds_;
  options.notices = plan->channel_->notices();
  options.workspace_owner = plan->backend_;
  options.call = str("weave_execute (plan: ", plan->problem_.summary(), ")");
  switch (plan->resolved_.issue_order) {
    case plan::IssueOrder::TransfersFirst: options.issue_order = exec::IssueOrder::TransfersFirst; break;
    case plan::IssueOrder::GemmsFirst: options.issue_order = exec::IssueOrder::GemmsFirst; break;
    case plan::IssueOrder::Alternate: options.issue_order = exec::IssueOrder::Alternate; break;
  }
  if (plan->resolved_.flags & WEAVE_FLAG_TRACE) {
    plan->trace_ = std::make_unique<exec::Trace>();
    options.trace = plan->trace_.get();
  }
  plan->executor_ = std::make_unique<exec::Executor>(plan->schedule_, *plan->backend_, *plan->transport_, options);
  plan->description_ = plan->describe();

  if (log_prints(plan->log_, grid->rank())) {
    std::fprintf(stderr, "weave[%d]: %s\n", grid->rank(), plan->description_.c_str());
    if (plan->log_.level == LogLevel::Trace) std::fprintf(stderr, "%s", plan::format_schedule(plan->schedule_).c_str());
  }
  if (plan->log_.timing_wanted()) plan->log_id_ = ExecuteLog::instance().add_plan(plan->problem_.summary());
  return plan;
}

Plan::~Plan() {
  try {
    log_unread_execute();
  } catch (...) {
    // An execute that failed on the GPU leaves no times to log.
  }
}

// A device plan's last execute, whose GPU timestamps were not read yet:
// wait for it and hand its times to the log.
void Plan::log_unread_execute() {
  if (!unread_execute_) return;
  unread_execute_ = false;
  exec::Trace trace = *trace_;
  backend_->collect_timings(trace, schedule_);
  double start = 0, end = 0;
  for (const exec::TraceSpan& span : trace.spans()) {
    start = std::min(start, span.start_us);
    end = std::max(end, span.end_us);
  }
  ExecuteLog::instance().add_execute(log_, log_id_, grid_->rank(), executes_, logged_start_us_, (end - start) / 1000.0,
                                     trace);
}

std::string Plan::describe() const {
  const Problem& p = problem_;
  const plan::Resolved& r = resolved_;
  const plan::Schedule& s = schedule_;
  std::string where = p.group == WEAVE_GROUP_GRID ? std::string("the grid")
                                                  : str(group_name(p.group), " ", p.group_index);
  std::string algorithm = str(plan::algorithm_name(s.algorithm));
  const std::string chunks = str(s.chunks_per_shard, " chunk", s.chunks_per_shard > 1 ? "s" : "", "/shard");
  if (s.algorithm == plan::Algorithm::Ring) algorithm += str(" ", plan::direction_name(s.direction), ", ", chunks);
  if (s.algorithm == plan::Algorithm::Direct || s.algorithm == plan::Algorithm::Pipelined)
    algorithm += str(", ", chunks);
  if (s.algorithm == plan::Algorithm::Hierarchical)
    algorithm += str(", ", chunks, ", ", plan::describe_hierarchical(p, r.schedule));
  // What travels between the ranks.
  std::string wire;
  if (p.group_size > 1) {
    if (p.operation == Operation::AgGemm) {
      wire = str("; A's rows travel as ", dtype_name(p.wire_type));
      if (p.quantized())
        wire += str(" (quantized from ", dtype_name(p.a_type), " once per shard, before they are sent",
                    p.wire_scale != ScaleMode::None ? ", a scale per row from its amax" : "", ")");
      if (p.wire_scale != ScaleMode::None)
        wire += str(" with their ", scale_mode_name(p.wire_scale), " scales (",
                    dtype_name(schedule_.buffers[plan::kBufferGatheredScale].dtype), ")",
                    s.algorithm == plan::Algorithm::Ring || s.algorithm == plan::Algorithm::Direct ? " in the same chunk"
                                                                                               : ", gathered beside them");
    } else if (p.operation != Operation::Gemm) {
      // What a reduction moves (plan/wire.hpp).
      wire = str("; ", plan::describe_wire(plan::reduction_wire(p, r.schedule, s.algorithm)));
    }
    if (p.operation != Operation::AgGemm && p.scaled())
      wire += "; each rank's product uses its own K-slice's scales";
  }
  std::string splits;
  if (p.operation == Operation::Gemm)
    splits = str("my C block ", p.grid.c.rows.count(p.grid.row_of(p.group_rank)), " x ",
                 p.grid.c.cols.count(p.grid.col_of(p.group_rank)));
  else if (p.operation == Operation::AgGemm)
    splits = str("M counts ", format_counts(p.m_split.counts()), ", N counts ", format_counts(p.n_split.counts()));
  else
    splits = str("K counts ", format_counts(p.k_split.counts()), ", M counts ", format_counts(p.m_split.counts()));
  if (p.operation == Operation::Gemm)
    where = str("the ", p.grid.prows, " x ", p.grid.pcols, " grid");
  std::string text = str(p.summary(), " over ", where, " (", p.group_size, " rank", p.group_size > 1 ? "s" : "",
                         ", I am ", p.group_rank, "): ", algorithm, "; backend ", backend_->name(), ", transport ",
                         transport_->name(), wire);
  if (r.backend == plan::Backend::Host) text += str(", progress ", plan::progress_name(r.progress));
  if (r.backend == plan::Backend::Cuda) text += str(", ", s.compute_lanes, " compute streams");
  text += str("; ", splits, "; workspace ", format_bytes(s.workspace_bytes), "; ", s.step_summary());
  const std::string notes = s.notes + r.notes;
  if (!notes.empty()) text += ";" + notes.substr(0, notes.size() - 1);
  return text;
}

weave_plan_info_t Plan::info() const {
  weave_plan_info_t info{};
  info.algorithm = static_cast<weave_algorithm_t>(schedule_.algorithm);
  info.backend = static_cast<weave_backend_t>(resolved_.backend);
  info.transport = static_cast<weave_transport_t>(resolved_.transport);
  info.direction = static_cast<weave_direction_t>(schedule_.direction);
  info.progress = static_cast<weave_progress_t>(resolved_.progress);
  info.chunks_per_shard = schedule_.chunks_per_shard;
  info.compute_streams = schedule_.compute_lanes;
  info.group_size = problem_.group_size;
  info.group_rank = problem_.group_rank;
  info.workspace_bytes = schedule_.workspace_bytes;
  info.steps = static_cast<int64_t>(schedule_.steps.size());
  info.a_type = static_cast<weave_dtype_t>(problem_.a_type);
  info.b_type = static_cast<weave_dtype_t>(problem_.b_type);
  info.c_type = static_cast<weave_dtype_t>(problem_.c_type);
  info.bias_type = problem_.has_bias ? static_cast<weave_dtype_t>(problem_.bias_type) : weave_dtype_t{};
  info.a_scale_mode = static_cast<weave_scale_mode_t>(problem_.a_scale);
  info.b_scale_mode = static_cast<weave_scale_mode_t>(problem_.b_scale);
  info.a_scale_elements = problem_.a_scales.elements();
  info.b_scale_elements = problem_.b_scales.elements();
  if (resolved_.schedule.gathered_output) {
    const plan::BufferSpec& g = schedule_.buffers[plan::kBufferGatheredScale];
    info.gathered_a_scale_elements = block_elements(g.rows, g.cols, g.ld, g.order, "the gathered scale elements");
  }
  info.wire_type = static_cast<weave_dtype_t>(problem_.wire_type);
  info.status = !transport_->device_wait_failure().empty() ? WEAVE_ERROR_TIMEOUT
                : failed_                                  ? WEAVE_ERROR_PLAN_FAILED
                                                           : WEAVE_SUCCESS;
  return info;
}

void Plan::validate_execute_args(const weave_execute_args_t& args) const {
  const Problem& p = problem_;
  const bool device = p.memory == Memory::Device;
  const bool can_ask_cuda = WEAVE_HAVE_CUDA && (device || cuda::process_uses_cuda());
  if (args.buffer_checks & ~(WEAVE_CHECK_TYPES | WEAVE_CHECK_ELEMENTS))
    fail(WEAVE_ERROR_INVALID_VALUE, "args->buffer_checks = ", args.buffer_checks, " has unknown bits");
  // A real plan has real scalars: an imaginary part would be dropped.
  if (!is_complex(p.dtype) && (args.alpha_imag != 0.0 || args.beta_imag != 0.0))
    fail(WEAVE_ERROR_INVALID_VALUE, "args->alpha_imag = ", args.alpha_imag, ", args->beta_imag = ", args.beta_imag,
         ": complex scalars, but the plan multiplies ", dtype_name(p.dtype), " matrices");
  // What a typed interface says it was handed, against what the plan's
  // blocks hold: a wrong element type or too small a buffer would be read or
  // written out of bounds.
  auto check_buffer = [&](weave_dtype_t given_type, int64_t given_elements, DType type, int64_t needed,
                          const char* name) {
    if ((args.buffer_checks & WEAVE_CHECK_TYPES) && given_type != weave_dtype_t{} &&
        static_cast<int>(given_type) != static_cast<int>(type))
      fail(WEAVE_ERROR_UNSUPPORTED_TYPE, name, " holds elements of type ",
           is_valid_dtype(given_type) ? dtype_name(static_cast<DType>(given_type)) : "(not a weave_dtype_t)",
           " but the plan's ", name, " is ", dtype_name(type));
    if ((args.buffer_checks & WEAVE_CHECK_ELEMENTS) && given_elements < needed)
      fail(WEAVE_ERROR_INVALID_VALUE, name, " holds ", given_elements, " elements but this rank's block needs ",
           needed);
  };
  auto elements_of = [](const LocalBlock& b, const char* name) {
    return block_elements(b.rows, b.cols, b.ld, b.order, "the elements of ", name);
  };
  check_buffer(args.a_type, args.a_elements, p.a_type, elements_of(p.a, "a"), "a");
  check_buffer(args.b_type, args.b_elements, p.b_type, elements_of(p.b, "b"), "b");
  check_buffer(args.c_type, args.c_elements, p.c_type, elements_of(p.c, "c"), "c");
  if (p.has_bias && args.bias)
    check_buffer(args.bias_type, args.bias_elements, p.bias_type, elements_of(p.bias, "bias"), "bias");
  auto check_pointer = [&](const void* pointer, const LocalBlock& block, const char* name) {
    // An empty block is never read or written: its pointer may be anything
    // (NULL, or what a zero-extent array hands out, such as the host
    // address Kokkos gives a zero-extent CudaSpace View).
    if (block.rows == 0 || block.cols == 0) return;
    if (!pointer)
      fail(WEAVE_ERROR_NULL_ARGUMENT, name, " is NULL but this rank's block is ", block.rows, " x ", block.cols);
    if (can_ask_cuda && cuda::is_device_pointer(pointer) != device)
      fail(WEAVE_ERROR_POINTER_KIND, name, " = ", pointer, " is a ", device ? "host" : "device",
           " pointer but the plan's matrices live in ", device ? "device" : "host", " memory");
  };
  check_pointer(args.a, p.a, "a");
  check_pointer(args.b, p.b, "b");
  check_pointer(args.c, p.c, "c");
  if (p.has_bias)
    check_pointer(args.bias, p.bias, "bias");
  else if (args.bias)
    fail(WEAVE_ERROR_INVALID_VALUE, "bias is not NULL but the plan was created without a bias descriptor");
  // Scales: a scaled operand's where its block has any (an empty block has
  // none and may pass NULL), in the plan's memory; none for the others.
  auto check_scales = [&](const void* pointer, int64_t given_elements, int64_t needed, ScaleMode mode, DType type,
                          const char* name, const char* operand) {
    if (mode == ScaleMode::None) {
      if (pointer)
        fail(WEAVE_ERROR_INVALID_VALUE, name, " is not NULL but the plan's ", operand, " is ", dtype_name(type),
             ", which has no scales");
      return;
    }
    if (needed == 0) return;  // no scales to read: any pointer, as for an empty block
    if (!pointer)
      fail(WEAVE_ERROR_NULL_ARGUMENT, name, " is NULL but the plan's ", operand, " is ", dtype_name(type), " with ",
           scale_mode_name(mode), " scales: this rank's needs ", needed, " (weave_execute_ex takes them)");
    if (can_ask_cuda && cuda::is_device_pointer(pointer) != device)
      fail(WEAVE_ERROR_POINTER_KIND, name, " = ", pointer, " is a ", device ? "host" : "device",
           " pointer but the plan's matrices (and their scales) live in ", device ? "device" : "host", " memory");
    if ((args.buffer_checks & WEAVE_CHECK_ELEMENTS) && given_elements < needed)
      fail(WEAVE_ERROR_INVALID_VALUE, name, " holds ", given_elements, " scales but this rank's ", operand,
           " needs ", needed);
  };
  check_scales(args.a_scale, args.a_scale_elements, p.a_scales.elements(), p.a_scale, p.a_type, "a_scale", "A");
  check_scales(args.b_scale, args.b_scale_elements, p.b_scales.elements(), p.b_scale, p.b_type, "b_scale", "B");
  if (resolved_.schedule.gathered_output) {
    const plan::BufferSpec& g = schedule_.buffers[plan::kBufferGatheredScale];
    check_scales(args.gathered_a_scale, args.gathered_a_scale_elements,
                 block_elements(g.rows, g.cols, g.ld, g.order, "the gathered scale elements"), p.wire_scale,
                 p.wire_type, "gathered_a_scale", "gathered A");
  } else if (args.gathered_a_scale) {
    fail(WEAVE_ERROR_INVALID_VALUE, "gathered_a_scale is not NULL but the plan lacks WEAVE_FLAG_GATHERED_OUTPUT");
  }
  if (resolved_.schedule.gathered_output) {
    const plan::BufferSpec& spec = schedule_.buffers[plan::kBufferGathered];
    LocalBlock g{spec.rows, spec.cols, spec.ld, spec.order};
    check_pointer(args.gathered_a, g, "gathered_a");
    if (args.ld_gathered_a != 0 && args.ld_gathered_a < spec.ld)
      fail(WEAVE_ERROR_INVALID_LEADING_DIMENSION, "ld_gathered_a = ", args.ld_gathered_a, " is smaller than ", spec.ld);
    // Its extent with the caller's ld must be a number of bytes, or offsets into it would wrap.
    const int64_t ld = args.ld_gathered_a != 0 ? args.ld_gathered_a : spec.ld;
    const int64_t elements = block_elements(spec.rows, spec.cols, ld, spec.order, "the elements of gathered_a (",
                                            spec.rows, " x ", spec.cols, ", ld_gathered_a = ", ld, ")");
    checked_mul(elements, static_cast<int64_t>(dtype_size(spec.dtype)), "the bytes of gathered_a (ld_gathered_a = ",
                ld, ")");
    if (args.gathered_a) check_buffer(args.gathered_a_type, args.gathered_a_elements, spec.dtype, elements, "gathered_a");
  } else if (args.gathered_a) {
    fail(WEAVE_ERROR_INVALID_VALUE, "gathered_a is not NULL but the plan lacks WEAVE_FLAG_GATHERED_OUTPUT");
  }

  check_outputs_apart(args);

  if (!device && args.stream)
    fail(WEAVE_ERROR_INVALID_VALUE, "stream must be NULL for a host plan (host execution is synchronous)");
  if (device && !transport_->stream_ordered() && cuda::stream_is_capturing(args.stream)) {
    std::string capturable;
    for (const transport::TransportRow& row : transport::transport_table())
      if (row.description.progression == plan::Progression::StreamOrdered && row.description.device_memory != plan::MemorySupport::No)
        capturable += str(capturable.empty() ? "" : ", ", row.description.name);
    fail(WEAVE_ERROR_UNSUPPORTED, "the ", transport_->name(), " transport is driven by the host and cannot be "
         "captured in a CUDA graph; use a stream-ordered transport (", capturable, ")");
  }
}

// What the execute writes (C, the gathered A and its scales) must share no
// byte with what it reads, nor with one another: Weave reads A's rows and
// writes C's at different times on different ranks, so an overlap gives a
// C that is neither product. (A gathered in place, a rank's rows of A where
// the gathered A holds them, is refused too: not every algorithm and
// element type writes the gathered A from those very bytes.)
void Plan::check_outputs_apart(const weave_execute_args_t& args) const {
  const Problem& p = problem_;
  struct Named {
    const char* name;
    StridedBytes bytes;
  };
  auto scales_of = [](const void* pointer, const ScaleLayout& layout) {
    return contiguous_bytes(pointer, layout.empty() ? 0 : layout.elements(), dtype_size(layout.dtype));
  };
  std::vector<Named> inputs = {
      {"a", block_bytes(args.a, p.a, dtype_size(p.a_type))},
      {"b", block_bytes(args.b, p.b, dtype_size(p.b_type))},
      {"a_scale", scales_of(args.a_scale, p.a_scales)},
      {"b_scale", scales_of(args.b_scale, p.b_scales)},
  };
  if (p.has_bias) inputs.push_back({"bias", block_bytes(args.bias, p.bias, dtype_size(p.bias_type))});
  std::vector<Named> outputs = {{"c", block_bytes(args.c, p.c, dtype_size(p.c_type))}};
  if (resolved_.schedule.gathered_output) {
    const plan::BufferSpec& g = schedule_.buffers[plan::kBufferGathered];
    const LocalBlock gathered{g.rows, g.cols, args.ld_gathered_a != 0 ? args.ld_gathered_a : g.ld, g.order};
    outputs.push_back({"gathered_a", block_bytes(args.gathered_a, gathered, dtype_size(g.dtype))});
    const plan::BufferSpec& gs = schedule_.buffers[plan::kBufferGatheredScale];
    outputs.push_back({"gathered_a_scale",
                       contiguous_bytes(args.gathered_a_scale, block_elements(gs.rows, gs.cols, gs.ld, gs.order,
                                                                              "the gathered scale elements"),
                                        dtype_size(gs.dtype))});
  }
  for (std::size_t o = 0; o < outputs.size(); ++o) {
    const std::string output = outputs[o].name;
    for (const Named& in : inputs) {
      if (share_bytes(outputs[o].bytes, in.bytes))
        fail(WEAVE_ERROR_INVALID_VALUE, output, " and ", in.name, " share memory (", output, " = ",
             outputs[o].bytes.base, ", ", in.name, " = ", in.bytes.base, "): the execute writes ", output,
             " while it reads ", in.name, "; pass separate buffers");
    }
    for (std::size_t other = 0; other < o; ++other)
      if (share_bytes(outputs[o].bytes, outputs[other].bytes))
        fail(WEAVE_ERROR_INVALID_VALUE, outputs[other].name, " and ", output, " share memory; the execute writes both",
             "; pass separate buffers");
  }
}

void Plan::execute(const weave_execute_args_t* args_pointer) {
  if (failed_)
    fail(WEAVE_ERROR_PLAN_FAILED, "an earlier execute of this plan failed; destroy it and create a new one");
  // A device-side wait of an earlier execute that gave up (a peer that did
  // not raise its flag within the timeout) fails the plan on this rank at
  // once; the other ranks learn it from their own waits, or time out in
  // this call's argument check.
  const std::string device_failure = transport_->device_wait_failure();
  if (!device_failure.empty()) {
    failed_ = true;
    fail(WEAVE_ERROR_TIMEOUT, device_failure, "; the plan is failed: destroy it on every rank");
  }
  weave_execute_args_t args{};
  auto validate = [&] {
    raise_pending_argument_error();
    if (!args_pointer) fail(WEAVE_ERROR_NULL_ARGUMENT, "args is NULL");
    args = read_sized(args_pointer, "args");
    validate_execute_args(args);
  };
  const bool checked = (resolved_.flags & WEAVE_FLAG_NO_EXECUTE_CHECK) == 0;
  channel_->begin_call(bounds_, str("weave_execute (plan: ", problem_.summary(), ")"));
  if (checked) {
    try {
      agree_on_errors(*channel_, validate, "the argument check before the first step");
      // alpha and beta alike on every rank of the group: a reduction sums
      // every rank's scaled product, so different ones give a C that is
      // neither (and GEMM-AR's ranks different C's).
      agree_on_errors(*channel_, [&] { check_same_on_all_ranks(*channel_, scalar_fields(args), "weave_execute"); },
                      "the check that every rank passed the same alpha and beta");
    } catch (const Error&) {
      failed_ = channel_->failed();  // a timeout; a bad argument leaves the plan usable
      throw;
    }
  } else {
    validate();
  }
  if (log_.timing_wanted()) log_unread_execute();
  const double start_us = ExecuteLog::instance().now_us();
  try {
    run_and_agree_on_outcome(args, checked);
  } catch (...) {
    failed_ = true;
    throw;
  }
  ++executes_;
  if (log_.timing_wanted()) {
    logged_start_us_ = start_us;
    if (backend_->asynchronous())
      unread_execute_ = true;  // its GPU timestamps are read later (log_unread_execute)
    else
      ExecuteLog::instance().add_execute(log_, log_id_, grid_->rank(), executes_, start_us,
                                         (ExecuteLog::instance().now_us() - start_us) / 1000.0, *trace_);
  }
}

// Runs the schedule; then every rank of the group agrees on the outcome, so
// no rank returns success for an execute that failed on another. A rank
// whose own wait timed out has told its peers (a give-up notice) and does
// not take part: the others' agreement cannot complete without it, so they
// fail too.
void Plan::run_and_agree_on_outcome(const weave_execute_args_t& args, bool checked) {
  exec::Bindings bindings;
  bindings.schedule = &schedule_;
  bindings.user = {args.a, args.b, args.c, args.bias, args.gathered_a, args.a_scale, args.b_scale, args.gathered_a_scale};
  bindings.gathered_ld = args.ld_gathered_a;
  bindings.workspace = backend_->workspace();
  exec::Scalars scalars{args.alpha, args.beta, args.alpha_imag, args.beta_imag};
  bindings.scalars = scalars;
  std::exception_ptr error;
  try {
    executor_->run(bindings, scalars, args.stream);
  } catch (const Error& e) {
    if (e.status() == WEAVE_ERROR_TIMEOUT) {
      channel_->mark_failed(e.what());
      throw;
    }
    error = std::current_exception();
  } catch (...) {
    error = std::current_exception();
  }
  if (!checked) {
    if (error) std::rethrow_exception(error);
    return;
  }
  agree_on_errors(*channel_, [&] {
    if (error) std::rethrow_exception(error);
  }, "the agreement on the outcome");
}

void Plan::write_trace(const char* path) const {
  if (!trace_) fail(WEAVE_ERROR_INVALID_VALUE, "the plan was created without WEAVE_FLAG_TRACE");
  // Device plans time their steps on the GPU; read those timestamps now (the
  // caller has synchronized with the execute) into a copy, so writing twice
  // writes the same trace.
  exec::Trace trace = *trace_;
  backend_->collect_timings(trace, schedule_);
  std::string file = path;
  const std::string rank = std::to_string(grid_->rank());
  for (std::size_t at = file.find("%r"); at != std::string::npos; at = file.find("%r", at + rank.size()))
    file.replace(at, 2, rank);
  std::ofstream out(file);
  if (!out) fail(WEAVE_ERROR_INVALID_VALUE, "cannot open ", file, " for writing");
  out << trace.to_chrome_json(grid_->rank());
}

}  // namespace weave::internal
