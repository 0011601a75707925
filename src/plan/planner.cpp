#include "plan/planner.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "core/checked.hpp"
#include "core/enum_value.hpp"
#include "core/error.hpp"
#include "core/wait_bounds.hpp"
#include "plan/environment_syntax.hpp"
#include "plan/summa_panels.hpp"
#include "plan/wire.hpp"

namespace weave::internal::plan {

const char* backend_name(Backend b) { return b == Backend::Host ? "host" : "cuda"; }

const char* progress_name(ProgressMode p) { return p == ProgressMode::Tiles ? "tiles" : "thread"; }

const TransportDescription* find_transport(const Capabilities& caps, Transport id) {
  for (const TransportDescription& t : caps.transports)
    if (t.id == id) return &t;
  return nullptr;
}

bool clears_at_start_measured_faster(Operation operation, int ranks) {
  return !(operation == Operation::GemmRs && ranks == 2);
}

MeasuredIssueOrder issue_order_measured_fastest(int ranks) {
  if (ranks <= 2) return {IssueOrder::GemmsFirst, 2};
  return {IssueOrder::Alternate, 4};
}

Environment read_environment() {
  Environment env;
  auto read = [&](const char* name) {
    const char* value = std::getenv(name);
    if (value && *value) env[name] = value;
  };
  for (const VariableSyntax& row : variable_syntax()) read(row.name);
  read("WEAVE_TIMEOUT");
  return env;
}

namespace {

// The 16-bit floating-point types (bf16, f16).
bool sixteen_bit(DType t) { return t == DType::BF16 || t == DType::F16; }

// What the plan's flags and its transport's collectives say a reduction
// moves (plan/wire.hpp reads these). Only a transport whose own collectives
// sum 16-bit types counts: one that delegates its collectives to NCCL (copy
// engines, SMs) keeps its pipelined products on its own transfers.
void set_reduction_wire_options(int32_t flags, const TransportDescription& transport, ScheduleOptions& o) {
  o.reduce_in_output_type = (flags & WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE) != 0;
  o.reduce_in_accumulation_type = (flags & WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE) != 0;
  o.collectives_sum_16_bit = transport.collectives == Collectives::Own && transport.own_collectives_sum_16_bit;
}

// Value of an environment variable chosen from `names` (index = enum value).
template <class Enum>
bool env_choice(const Environment& env, const char* variable, const std::map<std::string, Enum>& names, Enum* out) {
  // Every word a reader takes is in the variable's row, which plan creation
  // checks every set variable against (environment_syntax.hpp).
  const VariableSyntax* row = syntax_of(variable);
  for (const auto& entry : names)
    if (!row || std::find(row->words.begin(), row->words.end(), entry.first) == row->words.end())
      fail(WEAVE_ERROR_INTERNAL, variable, "=", entry.first, " is read but not in the variable's row of "
           "plan/environment_syntax.cpp");
  auto found = env.find(variable);
  if (found == env.end()) return false;
  auto match = names.find(found->second);
  if (match == names.end()) {
    std::string allowed;
    for (const auto& [name, value] : names) allowed += (allowed.empty() ? "" : ", ") + name;
    fail(WEAVE_ERROR_INVALID_VALUE, variable, "=", found->second, " is not one of ", allowed);
  }
  *out = match->second;
  return true;
}

// An integer in [minimum, maximum] (environment_syntax.hpp's integer_value).
int64_t env_integer(const Environment& env, const char* variable, int64_t fallback, int64_t minimum,
                    int64_t maximum) {
  const VariableSyntax* row = syntax_of(variable);
  if (!row || !row->words.empty() || row->minimum != minimum || row->maximum != maximum)
    fail(WEAVE_ERROR_INTERNAL, variable, " is read as an integer from ", minimum, " to ", maximum,
         " but its row of plan/environment_syntax.cpp says otherwise");
  auto found = env.find(variable);
  return found == env.end() ? fallback : integer_value(*row, found->second);
}

// Every bit weave_plan_desc_t's flags may have.
constexpr int kKnownFlags = WEAVE_FLAG_ALLOW_TF32 | WEAVE_FLAG_GATHERED_OUTPUT | WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE |
                            WEAVE_FLAG_TRACE | WEAVE_FLAG_NO_EXECUTE_CHECK | WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE;

// A count of the plan descriptor: 0 (automatic) up to `maximum`.
void require_count(const char* name, int32_t value, int32_t maximum, const char* maximum_is) {
  if (value < 0) fail(WEAVE_ERROR_INVALID_VALUE, name, " = ", value, " is negative");
  if (value > maximum)
    fail(WEAVE_ERROR_INVALID_VALUE, name, " = ", value, " exceeds ", maximum, ", the most of ", maximum_is);
}

// GEMM-RS with A's scales in 128-row bands: the first row of C a rank
// holds that starts inside a band (-1: none does).
int64_t reduce_scatter_cut_inside_band(const Problem& p) {
  if (p.operation != Operation::GemmRs) return -1;
  if (p.a_scale != ScaleMode::Block128x128 && p.a_scale != ScaleMode::Mxfp8) return -1;
  int64_t start = 0;
  for (int q = 0; q + 1 < p.m_split.parts(); ++q) {
    start += p.m_split.count(q);
    if (start % 128 != 0 && start < p.m) return start;
  }
  return -1;
}

// Flops of this rank's share of the product.
double local_flops(const Problem& p) {
  const double P = p.group_size;
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / P;
}

// Chunks per shard when the caller leaves it to Weave. Pipelined
// collectives and hierarchical plans: kPipelinedChunks. AG-GEMM: one chunk
// (whole shards; more chunks made measured device AG-GEMMs slower). Direct
// reductions: the direct chunk rule of their transfers (transfer_choice.hpp).
// Host ring reductions: two. Device ring reductions: two, or four when a
// chunk's partial sums would exceed kDeviceReductionChunkBytes.
int default_chunks(const Problem& p, Backend backend, Algorithm algorithm, bool peer_sums, bool one_shot = false) {
  if (algorithm == Algorithm::Pipelined || algorithm == Algorithm::Hierarchical) return kPipelinedChunks;
  if (p.operation == Operation::AgGemm) return 1;
  if (algorithm == Algorithm::Direct && one_shot && !peer_sums) return one_shot_chunks(p);
  if (algorithm == Algorithm::Direct) return direct_chunks(p, peer_sums ? kPeerSumDirectChunks : kCopyEngineDirectChunks);
  if (backend != Backend::Cuda) return 2;  // host reductions: two chunks pipeline best (doc/performance.md)
  const double rows_per_chunk = static_cast<double>(p.m) / p.group_size / 2.0;
  const double bytes = rows_per_chunk * static_cast<double>(p.n) * static_cast<double>(dtype_size(accumulation_type(p.dtype)));
  return bytes > kDeviceReductionChunkBytes ? 4 : 2;
}

// "a, b or c"
std::string either(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i)
    text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return text;
}

// The transport of a plan that leaves it automatic: the first row of the
// table that is automatic, moves the plan's memory and reaches its group
// (a row for one node's GPUs only when compiled in and the peer-access probe
// passed); a row taking SMs from a budget only where the measured rule
// prefers SM-driven transfers for this operation and shape. A row reaching
// any ranks is taken even when it is not compiled in, so that the plan
// fails saying which option builds it rather than falling back.
const TransportDescription& automatic_transport(bool device, const Problem& problem, const Capabilities& caps,
                                                std::string& notes) {
  std::string passed_over;  // why a better row was not taken
  for (const TransportDescription& t : caps.transports) {
    if (!t.automatic || (device ? t.device_memory : t.host_memory) == MemorySupport::No) continue;
    if (t.reach == Reach::OneNodePeerAccess) {
      if (!t.compiled) continue;
      if (!caps.peer_access) {
        if (!caps.peer_access_why_not.empty() && passed_over.empty()) passed_over = caps.peer_access_why_not;
        continue;
      }
    }
    if (t.sms == SmUse::Budget) {
      const TransferChoice choice = choose_transfers(problem, caps.sm_transfer_rules);
      if (!choice.sm_transfers) {
        passed_over = str("not ", t.name, ": ", choice.why);
        continue;
      }
      notes += str(" ", t.name, " chosen: the group shares one node with peer access, ", choice.why, ";");
      return t;
    }
    if (t.reach == Reach::OneNodePeerAccess)
      notes += str(" ", t.name, " chosen: the group shares one node with peer access",
                   passed_over.empty() ? "" : " (" + passed_over + ")", ";");
    else if (device && !passed_over.empty())
      notes += str(" ", t.name, " chosen: ", passed_over, ";");
    return t;
  }
  fail(WEAVE_ERROR_INTERNAL, "no transport of the table moves ", device ? "device" : "host", " memory");
}

// Chunks per shard asked for: the descriptor's, else WEAVE_CHUNKS; 0 when
// neither asks.
int asked_chunks_per_shard(const weave_plan_desc_t& desc, const Environment& env) {
  if (desc.chunks_per_shard > 0) return desc.chunks_per_shard;
  return static_cast<int>(env_integer(env, "WEAVE_CHUNKS", 0, 1, kMaxChunksPerShard));
}

// Chunks per shard of a device direct reduction: asked for, else the direct
// chunk rule.
int direct_chunks_asked_or_default(const weave_plan_desc_t& desc, const Problem& problem, const Environment& env,
                                   const TransportDescription& transport) {
  const int asked = asked_chunks_per_shard(desc, env);
  return asked > 0 ? asked : default_chunks(problem, Backend::Cuda, Algorithm::Direct, transport.reads_peer_memory);
}

// A transport asked for, or chosen, must be built and move the plan's memory.
void check_transport_fits(const TransportDescription& t, Backend backend, bool automatic, const Capabilities& caps) {
  if (!t.compiled)
    fail(WEAVE_ERROR_NOT_COMPILED, "the ", t.title, " transport is not compiled into this Weave; rebuild with -D",
         t.build_option, "=ON");
  const bool device = backend == Backend::Cuda;
  if ((device ? t.device_memory : t.host_memory) != MemorySupport::No) return;
  // Those that do, for the message (with the option that builds them).
  std::vector<std::string> fitting;
  for (const TransportDescription& other : caps.transports)
    if ((device ? other.device_memory : other.host_memory) != MemorySupport::No)
      fitting.push_back(str(other.name, other.compiled ? "" : str(" (-D", other.build_option, "=ON)")));
  fail(WEAVE_ERROR_UNSUPPORTED, "the ", t.name, " transport moves ", device ? "host" : "device", " memory only; ",
       device ? "device" : "host", " plans use the ", either(fitting), " transport",
       automatic ? str(" (", t.name, " was chosen by WEAVE_TRANSPORT)") : "");
}

// WEAVE_GEMM: SUMMA (or its sequential variant, or the local GEMM of one
// rank), no ring direction, panels instead of chunks.
void resolve_grid_gemm(const weave_plan_desc_t& desc, const Problem& problem, const Environment& env, Resolved& r) {
  std::string& notes = r.notes;
  int algorithm = enum_value(desc.algorithm);
  bool chosen_here = false;  // SUMMA by default, neither asked for nor named in WEAVE_ALGORITHM
  if (algorithm == WEAVE_ALGORITHM_AUTO) {
    weave_algorithm_t from_env = WEAVE_ALGORITHM_AUTO;
    algorithm = WEAVE_ALGORITHM_SUMMA;
    chosen_here = true;
    if (env_choice<weave_algorithm_t>(env, "WEAVE_ALGORITHM",
                                      {{"ring", WEAVE_ALGORITHM_RING},
                                       {"sequential", WEAVE_ALGORITHM_SEQUENTIAL},
                                       {"direct", WEAVE_ALGORITHM_DIRECT},
                                       {"pipelined", WEAVE_ALGORITHM_PIPELINED},
                                       {"hierarchical", WEAVE_ALGORITHM_HIERARCHICAL},
                                       {"summa", WEAVE_ALGORITHM_SUMMA}},
                                      &from_env)) {
      // One variable for a whole program: ring, direct, pipelined and
      // hierarchical are the 1-D operations' algorithms.
      if (from_env == WEAVE_ALGORITHM_SEQUENTIAL || from_env == WEAVE_ALGORITHM_SUMMA) {
        algorithm = from_env;
        chosen_here = false;
        notes += " algorithm from WEAVE_ALGORITHM;";
      } else {
        notes += str(" SUMMA chosen: WEAVE_ALGORITHM=", env.at("WEAVE_ALGORITHM"),
                     " applies to AG-GEMM, GEMM-RS and GEMM-AR;");
      }
    }
  }
  // (The algorithm asked for, the direction and chunks_per_shard were
  // checked with the other options: check_option_values.)
  r.schedule.algorithm = static_cast<Algorithm>(algorithm);
  if (problem.group_size == 1) r.schedule.algorithm = Algorithm::Sequential;
  r.schedule.direction = Direction::Forward;
  r.schedule.chunks_per_shard = 1;
  // Panel width: the backend's default (planner.hpp says how far each is
  // measured), or WEAVE_PANEL_WIDTH.
  const int64_t default_width = r.backend == Backend::Cuda ? kDevicePanelWidth : kHostPanelWidth;
  const bool width_asked = env.count("WEAVE_PANEL_WIDTH") > 0;
  int64_t width = env_integer(env, "WEAVE_PANEL_WIDTH", default_width, 1, int64_t{1} << 40);
  if (width_asked) notes += str(" panels up to ", width, " wide (WEAVE_PANEL_WIDTH);");
  const int64_t fewest = (problem.k + kMaxSummaPanels - 1) / kMaxSummaPanels;
  if (width < fewest) {
    notes += str(" panels widened to ", fewest, ": K = ", problem.k, " in at most ", kMaxSummaPanels, " panels;");
    width = fewest;
  }
  r.schedule.panel_width = width;
  // Device plans left automatic: bands of C where they were measured faster
  // than SUMMA's panels (planner.hpp), else, on a grid of one row or one
  // column, the sequential plan where SUMMA would pack most of what it moves.
  const GridOperands& g = problem.grid;
  const bool line = g.prows == 1 || g.pcols == 1;
  const bool automatic_device_summa =
      chosen_here && r.backend == Backend::Cuda && r.schedule.algorithm == Algorithm::Summa && problem.group_size > 1;
  int64_t bands = 0;
  const double flops_per_byte = gemm_flops_per_received_byte(problem);
  const bool bands_asked = env.count("WEAVE_GEMM_BANDS") > 0;
  if (automatic_device_summa && sixteen_bit(problem.dtype) && !bands_asked &&
      flops_per_byte >= kBandsMaxFlopsPerReceivedByte) {
    r.schedule.algorithm = Algorithm::Sequential;
    notes += str(" sequential chosen: each rank's GEMM does ", flops_per_byte, " flops per byte it receives (from ",
                 kBandsMaxFlopsPerReceivedByte, " the communication is a few percent of the GEMM, less than "
                 "cutting the GEMM into bands costs; doc/performance.md; WEAVE_ALGORITHM=summa overrides);");
  } else if (automatic_device_summa && bands_measured_faster(problem.dtype, line)) {
    bands = kDeviceGemmBands;
    notes += str(" ", kDeviceGemmBands, " bands of C: on this ", g.prows, " x ", g.pcols, " grid ",
                 line ? "" : "op(B) is gathered whole first and ",
                 g.pcols > 1 ? "op(A)" : "op(B)", " travels in bands of C, one GEMM over all of K per band",
                 accumulation_type(problem.dtype) != problem.dtype
                     ? str(" writes ", dtype_name(problem.dtype), " C once (SUMMA's panels would each read and write C's ",
                           dtype_name(accumulation_type(problem.dtype)), " sums)")
                     : std::string(),
                 "; measured faster than SUMMA's panels for ", dtype_name(problem.dtype),
                 " (doc/performance.md; WEAVE_GEMM_BANDS=0 keeps the panels);");
  } else if (automatic_device_summa) {
    const double packed_per_received = line_grid_packing_ratio(problem, width);
    if (packed_per_received >= kLineGridMaxPackedPerReceived) {
      r.schedule.algorithm = Algorithm::Sequential;
      notes += str(" sequential chosen: on this ", problem.grid.prows, " x ", problem.grid.pcols, " grid SUMMA would "
                   "pack each rank's whole block of the operand the grid does not split along K, ",
                   packed_per_received, " x the bytes it receives, which is all its overlap can hide, at every "
                   "execute; measured slower than the sequential plan there (doc/performance.md; "
                   "WEAVE_ALGORITHM=summa overrides);");
    }
  }
  // WEAVE_GEMM_BANDS sets any SUMMA plan's bands (0: panels).
  if (r.schedule.algorithm == Algorithm::Summa && problem.group_size > 1) {
    if (bands_asked) {
      bands = env_integer(env, "WEAVE_GEMM_BANDS", bands, 0, kMaxGemmBands);
      notes += str(" ", bands == 0 ? str("SUMMA's panels") : str(bands, " bands of C"), " (WEAVE_GEMM_BANDS);");
    }
    r.schedule.gemm_bands = static_cast<int>(bands);
  }
}

}  // namespace

void check_option_values(const weave_plan_desc_t& desc, Operation operation) {
  auto in_range = [](const char* name, int value, int last, const char* type) {
    if (value < 0 || value > last) fail(WEAVE_ERROR_INVALID_VALUE, name, " = ", value, " is not a ", type);
  };
  in_range("algorithm", enum_value(desc.algorithm), WEAVE_ALGORITHM_SUMMA, "weave_algorithm_t");
  in_range("backend", enum_value(desc.backend), WEAVE_BACKEND_CUDA, "weave_backend_t");
  in_range("transport", enum_value(desc.transport), WEAVE_TRANSPORT_SM, "weave_transport_t");
  in_range("direction", enum_value(desc.direction), WEAVE_DIRECTION_BIDIRECTIONAL, "weave_direction_t");
  in_range("progress", enum_value(desc.progress), WEAVE_PROGRESS_THREAD, "weave_progress_t");
  if (desc.flags & ~kKnownFlags) fail(WEAVE_ERROR_INVALID_VALUE, "flags = ", desc.flags, " has unknown bits");
  if (desc.reserved != 0) fail(WEAVE_ERROR_INVALID_VALUE, "reserved = ", desc.reserved, ", not 0");
  require_count("chunks_per_shard", desc.chunks_per_shard, kMaxChunksPerShard, "the chunks Weave cuts a shard into");
  require_count("compute_streams", desc.compute_streams, kMaxComputeStreams, "the compute streams a plan runs");
  if ((desc.flags & WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE) && (desc.flags & WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE))
    fail(WEAVE_ERROR_INVALID_VALUE, "flags ask for both WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE and "
         "WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE; a reduction moves one type");
  // What the operation takes.
  const int algorithm = enum_value(desc.algorithm);
  if ((desc.flags & WEAVE_FLAG_GATHERED_OUTPUT) && operation != Operation::AgGemm)
    fail(WEAVE_ERROR_INVALID_VALUE, "WEAVE_FLAG_GATHERED_OUTPUT is for AG-GEMM plans only");
  if (operation == Operation::Gemm) {
    if (algorithm != WEAVE_ALGORITHM_AUTO && algorithm != WEAVE_ALGORITHM_SUMMA &&
        algorithm != WEAVE_ALGORITHM_SEQUENTIAL)
      fail(WEAVE_ERROR_UNSUPPORTED, "algorithm = ", algorithm, " is for AG-GEMM, GEMM-RS and GEMM-AR; WEAVE_GEMM runs "
           "WEAVE_ALGORITHM_SUMMA or WEAVE_ALGORITHM_SEQUENTIAL");
    if (enum_value(desc.direction) != WEAVE_DIRECTION_AUTO)
      fail(WEAVE_ERROR_UNSUPPORTED, "direction = ", enum_value(desc.direction), " is for rings; WEAVE_GEMM broadcasts "
           "panels along grid rows and columns (leave direction automatic)");
    if (desc.chunks_per_shard != 0)
      fail(WEAVE_ERROR_UNSUPPORTED, "chunks_per_shard = ", desc.chunks_per_shard, ": WEAVE_GEMM cuts K into panels, "
           "not shards into chunks (leave it 0; WEAVE_PANEL_WIDTH sets the panels' width)");
  } else if (algorithm == WEAVE_ALGORITHM_SUMMA) {
    fail(WEAVE_ERROR_UNSUPPORTED, "WEAVE_ALGORITHM_SUMMA is for WEAVE_GEMM; ", operation_name(operation),
         " runs the ring, the sequential, the pipelined, the hierarchical or (reductions) the direct algorithm");
  }
}

Resolved resolve_options(const weave_plan_desc_t& desc, const Problem& problem, const Environment& env,
                         const Capabilities& caps) {
  // Every variable set is checked, also those this plan does not read.
  check_environment_syntax(env);
  Resolved r;
  std::string& notes = r.notes;
  r.flags = desc.flags;
  check_option_values(desc, problem.operation);

  // Backend: from the matrices' memory unless asked for.
  // The caller's enumerations are validated as integers (core/enum_value.hpp).
  const int backend = enum_value(desc.backend);
  switch (backend) {
    case WEAVE_BACKEND_AUTO:
      r.backend = problem.memory == Memory::Device ? Backend::Cuda : Backend::Host;
      break;
    case WEAVE_BACKEND_HOST: r.backend = Backend::Host; break;
    case WEAVE_BACKEND_CUDA: r.backend = Backend::Cuda; break;
    default: fail(WEAVE_ERROR_INVALID_VALUE, "backend = ", backend, " is not a weave_backend_t");
  }
  if (r.backend == Backend::Cuda && !caps.cuda)
    fail(WEAVE_ERROR_NOT_COMPILED, "the CUDA backend is not compiled into this Weave; rebuild with -DWEAVE_ENABLE_CUDA=ON");
  if (r.backend == Backend::Host && problem.memory == Memory::Device)
    fail(WEAVE_ERROR_POINTER_KIND, "the host backend cannot use device matrices; use WEAVE_BACKEND_CUDA (or AUTO)");
  if (r.backend == Backend::Cuda && problem.memory == Memory::Host)
    fail(WEAVE_ERROR_POINTER_KIND, "the CUDA backend needs device matrices (descriptor memory = WEAVE_MEMORY_DEVICE)");
  // Every operand's type runs on the backend (the type table's columns).
  const std::pair<const char*, DType> operand_types[] = {
      {"A", problem.a_type}, {"B", problem.b_type}, {"C", problem.c_type}, {"bias", problem.bias_type}};
  for (const auto& [name, type] : operand_types) {
    const DTypeRow& row = dtype_row(type);
    if ((r.backend == Backend::Host ? row.host : row.cuda) == Support::No)
      fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the ", backend_name(r.backend), " backend does not run ", row.name, " (",
           name, ")");
  }

  // Transport: asked for, from the environment, or the first automatic row
  // of the table that fits (automatic_transport).
  const TransportDescription* transport = nullptr;
  const int asked_transport = enum_value(desc.transport);
  if (asked_transport == WEAVE_TRANSPORT_AUTO) {
    std::map<std::string, Transport> names;
    for (const TransportDescription& t : caps.transports) names[t.name] = t.id;
    Transport from_env{};
    if (env_choice<Transport>(env, "WEAVE_TRANSPORT", names, &from_env)) {
      transport = find_transport(caps, from_env);
      notes += " transport from WEAVE_TRANSPORT;";
    } else {
      transport = &automatic_transport(r.backend == Backend::Cuda, problem, caps, notes);
    }
  } else {
    transport = find_transport(caps, static_cast<Transport>(asked_transport));
    if (!transport)
      fail(WEAVE_ERROR_INVALID_VALUE, "transport = ", asked_transport, " is not a weave_transport_t");
  }
  r.transport = transport->id;
  check_transport_fits(*transport, r.backend, asked_transport == WEAVE_TRANSPORT_AUTO, caps);

  if (problem.operation == Operation::Gemm) {
    resolve_grid_gemm(desc, problem, env, r);
  } else {
    // Algorithm.
    const int P = problem.group_size;
    const bool reduction = problem.operation != Operation::AgGemm;
    // AG-GEMM rows that travel with scales (FP8, or quantized to a wire
    // type): the ring and the sequential plan carry them; the pipelined and
    // hierarchical builders gather unscaled rows only.
    const bool scaled_rows_travel = !reduction && (problem.scaled() || problem.quantized());
    int algorithm = enum_value(desc.algorithm);
    int model_chunks = 0;  // chunks per shard the model chose with the algorithm
    if (algorithm == WEAVE_ALGORITHM_AUTO) {
      weave_algorithm_t from_env = WEAVE_ALGORITHM_AUTO;
      if (env_choice<weave_algorithm_t>(env, "WEAVE_ALGORITHM",
                                        {{"ring", WEAVE_ALGORITHM_RING},
                                         {"sequential", WEAVE_ALGORITHM_SEQUENTIAL},
                                         {"direct", WEAVE_ALGORITHM_DIRECT},
                                         {"pipelined", WEAVE_ALGORITHM_PIPELINED},
                                         {"hierarchical", WEAVE_ALGORITHM_HIERARCHICAL},
                                         {"summa", WEAVE_ALGORITHM_SUMMA}},
                                        &from_env)) {
        algorithm = from_env;
        notes += " algorithm from WEAVE_ALGORITHM;";
        if (algorithm == WEAVE_ALGORITHM_SUMMA) {
          algorithm = WEAVE_ALGORITHM_RING;
          notes += " ring chosen: WEAVE_ALGORITHM=summa applies to WEAVE_GEMM;";
        }
        if (scaled_rows_travel && (algorithm == WEAVE_ALGORITHM_PIPELINED || algorithm == WEAVE_ALGORITHM_HIERARCHICAL)) {
          algorithm = WEAVE_ALGORITHM_RING;
          notes += " ring chosen: the pipelined and hierarchical AG-GEMM gather unscaled rows;";
        }
      } else {
        algorithm = WEAVE_ALGORITHM_RING;
        const double flops = local_flops(problem);
        // What measurement chose over this transport (its row): over copy
        // engines the direct algorithm beat the ring, whose hops wait on one
        // another; over NCCL, whose kernels take SMs from the GEMMs, no
        // reduction ring beat the sequential plan on one node, and AG-GEMM's
        // ring did only from about 1 TFLOP per rank (doc/performance.md; not
        // measured across nodes: WEAVE_ALGORITHM=ring asks for the ring).
        const Algorithm measured = transport->reduction_algorithm;
        const double min_flops = transport->reads_peer_memory ? kPeerSumOverlapMinFlops : kDeviceOverlapMinFlops;
        // A transport with collectives of its own that reaches any rank
        // (NCCL, MPI, UCX): where the two rules below apply.
        const bool own_collectives_anywhere =
            P > 1 && transport->collectives == Collectives::Own && transport->reach == Reach::AnyRanks;
        // Device reductions across nodes over NCCL: a measured rule (each
        // emulated configuration measured on H100s or H200s, ms ratios to
        // the sequential plan; doc/performance.md). Nodes of several GPUs
        // with host-staged NCCL (reduce-scatter calibrated at 33 GB/s): the
        // pipelined plan beat the sequential, ring and hierarchical ones for
        // GEMM-RS and GEMM-AR on every shape from 4096x8192x8192 up, in two
        // runs (0.75-0.95). Nodes of one GPU: host-staged (50 GB/s) it lost
        // 4-35% on four of six reductions; over sockets (8 GB/s) it took
        // 1.20-1.45 x in one run and 0.64-0.74 x in another (the sockets'
        // collective times moved 2 x between runs). Nodes of two GPUs over
        // sockets (6.3 GB/s): the hierarchical plan (node partial sums over
        // NVLink, then only each local index's rows between nodes) took
        // 0.33-0.52 x the sequential plan on every shape, 1024 rows included,
        // where the pipelined one took 0.50-0.91 (one run, 4 H100s). So:
        // where nodes hold several ranks, pipelined over a fast calibrated
        // link and hierarchical over a slow one; nodes of one rank, or no
        // calibration (WEAVE_CALIBRATE=0), the sequential plan, which is
        // never slower than itself. The hierarchical plan pays by moving
        // fewer bytes across the link, not only by overlap, so it runs down
        // to the smallest shape measured (1024x8192x8192 over 4 ranks, 34
        // GFLOP per rank: 0.44-0.45 x over sockets on H100s, 0.81-0.96 x on
        // H200s); the pipelined plan from one node's overlap threshold
        // (at 34 GFLOP 0.56-0.59 x on H100s but 1.04-1.24 x on H200s).
        const bool reductions_across_nodes =
            own_collectives_anywhere && reduction && r.backend == Backend::Cuda && caps.nodes.nodes > 1;
        double reduction_bytes_per_s = 0;
        if (reductions_across_nodes && caps.calibration && caps.calibration->reduce_scatter.seconds_per_byte > 0)
          reduction_bytes_per_s = 1.0 / caps.calibration->reduce_scatter.seconds_per_byte;
        const bool several_per_node = caps.nodes.ranks_per_node() > 1;
        // Where the rule may take an overlapped plan (nodes of several
        // ranks, from the smallest shape measured): it then calibrates, and
        // the link's rate picks the plan, each from its own size.
        const bool across_nodes_rule_applies =
            reductions_across_nodes && several_per_node &&
            flops >= std::min(kHierarchicalAcrossNodesMinFlops, kPipelinedAcrossNodesMinFlops);
        const bool fast_link = reduction_bytes_per_s >= kPipelinedAcrossNodesMinBytesPerSecond;
        const bool pipelined_across_nodes =
            across_nodes_rule_applies && fast_link && flops >= kPipelinedAcrossNodesMinFlops;
        const bool hierarchical_across_nodes = across_nodes_rule_applies && reduction_bytes_per_s > 0 && !fast_link &&
                                               flops >= kHierarchicalAcrossNodesMinFlops;
        // Where no other measured rule covers the links (host plans; device
        // AG-GEMM whose group spans several nodes, over NCCL) the model
        // chooses, from a calibration at plan creation (plan/cost_model.hpp).
        const bool model_applies = own_collectives_anywhere && !reductions_across_nodes &&
                                   (r.backend == Backend::Host || caps.nodes.nodes > 1);
        // WEAVE_CALIBRATE: 1 (the model, timing its close candidates where
        // affordable), model (the model alone), time (timing its fastest
        // kMaxTrials algorithms, however far apart and however small or
        // large the plan), 0 (neither: the measured rules).
        enum class Calibrate { Off, ModelOnly, Affordable, Always };
        Calibrate mode = Calibrate::Affordable;
        env_choice<Calibrate>(env, "WEAVE_CALIBRATE",
                              {{"1", Calibrate::Affordable}, {"0", Calibrate::Off}, {"model", Calibrate::ModelOnly},
                               {"time", Calibrate::Always}},
                              &mode);
        const bool calibrate = mode != Calibrate::Off;
        // The candidate to run where the model chose: the fastest timed one
        // once `what` (choice.close) was timed at plan creation; else the
        // model's, asking for that timing where it is affordable
        // (Resolved::wants_trials) and saying why not where it is not.
        // With `model_chose` false a measured rule chose, and the model only
        // lists what to time: its choice and why are not the plan's.
        auto take_timed_or = [&](const ModelChoice& choice, const char* what, bool model_chose = true) {
          if (caps.trials && !caps.trials->measured.empty()) {
            const Candidate timed = choose_by_trials(caps.trials->measured);
            notes += str(" ", candidate_name(timed), " chosen by timing ", what, " at plan creation (measured ms, "
                         "slowest rank: ", candidate_times(caps.trials->measured), ")",
                         caps.trials->left_out.empty() ? std::string() : str(" (", caps.trials->left_out, ")"),
                         model_chose ? str("; before timing, ", choice.why) : std::string(), ";");
            return timed;
          }
          if (model_chose) notes += str(" ", choice.why, ";");
          if (caps.trials) {
            notes += str(" ", what, " not timed: ", caps.trials->not_timed, ";");
          } else if (choice.close.size() > 1) {
            const double trials = trial_seconds(choice.close), budget = trial_budget_seconds(choice.close);
            const double fastest = choice.close.front().seconds;
            if (mode == Calibrate::ModelOnly)
              notes += str(" ", what, " not timed (WEAVE_CALIBRATE=model);");
            else if (mode == Calibrate::Affordable && fastest < kTrialMinSeconds)
              notes += str(" ", what, " not timed: predicted below ", kTrialMinSeconds * 1e3, " ms;");
            else if (mode == Calibrate::Affordable && trials > budget)
              notes += str(" ", what, " not timed: their trials would take ", trials, " s, over their budget of ",
                           budget, " s (", kTrialBudgetPlanRuns, " runs of the fastest, at least ", kTrialBudgetSeconds,
                           " s, at most ", kTrialMaxBudgetSeconds, ");");
            else
              r.wants_trials = choice.close;
          }
          return choice.chosen;
        };
        const bool too_small = r.backend == Backend::Cuda && problem.group_size > 1 && flops < min_flops &&
                               !across_nodes_rule_applies;
        const double k_per_peer = direct_all_reduce_k_per_peer(problem);  // the reductions' rules below
        // The wire the flags ask for, as the schedule reads them (for those
        // rules, the model and the 16-bit check below).
        ScheduleOptions reduce_flags;
        set_reduction_wire_options(desc.flags, *transport, reduce_flags);
        // Those rules trade the direct algorithm for the sequential plan only
        // where the sequential plan moves no more bytes: by default it moves
        // float32 partial sums (one rounding) where the direct algorithm
        // moves 16-bit products (two), and on 4 H100s that doubled
        // exchange made FP8 GEMM-AR 1.26-1.54 x slower than the direct
        // algorithm it replaced (doc/performance.md). With
        // WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE (16-bit partial sums) or
        // WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE (float32 products) both move
        // the same bytes.
        const bool sequential_moves_no_more =
            reduction && dtype_size(reduction_wire(problem, reduce_flags, Algorithm::Sequential).type) <=
                             dtype_size(reduction_wire(problem, reduce_flags, Algorithm::Direct).type);
        // Not measured yet: the plan calibrates, then resolves again; the
        // rules below stand in until then.
        if ((model_applies || reductions_across_nodes) && calibrate && !caps.calibration && !too_small)
          r.wants_calibration = true;
        if ((model_applies || reductions_across_nodes) && !calibrate)
          notes += " no calibration (WEAVE_CALIBRATE=0): the measured rules choose;";
        if (too_small) {
          algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
          notes += str(" sequential chosen: ", flops / 1e9, " GFLOP per rank is too little for overlap to pay;");
        } else if (pipelined_across_nodes) {
          algorithm = WEAVE_ALGORITHM_PIPELINED;
          notes += str(" pipelined chosen: across ", caps.nodes.summary(), " over ", transport->title,
                       " reduce-scatter calibrated at ", reduction_bytes_per_s / 1e9, " GB/s, at least ",
                       kPipelinedAcrossNodesMinBytesPerSecond / 1e9,
                       ", where the pipelined reductions measured fastest (doc/performance.md);");
        } else if (hierarchical_across_nodes) {
          algorithm = WEAVE_ALGORITHM_HIERARCHICAL;
          notes += str(" hierarchical chosen: across ", caps.nodes.summary(), " over ", transport->title,
                       " reduce-scatter calibrated at ", reduction_bytes_per_s / 1e9, " GB/s, below ",
                       kPipelinedAcrossNodesMinBytesPerSecond / 1e9,
                       ", where the hierarchical reductions measured fastest (doc/performance.md);");
        } else if (reductions_across_nodes) {
          algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
          if (across_nodes_rule_applies && fast_link)
            notes += str(" sequential chosen: across ", caps.nodes.summary(), " over a link calibrated at ",
                         reduction_bytes_per_s / 1e9, " GB/s the pipelined reductions pay from ",
                         kPipelinedAcrossNodesMinFlops / 1e9, " GFLOP per rank, this is ", flops / 1e9,
                         " (doc/performance.md);");
          else if (caps.calibration && !several_per_node)
            notes += str(" sequential chosen: across ", caps.nodes.summary(), " (one rank per node) the pipelined "
                         "reductions measured faster in some runs and slower in others than the sequential plan "
                         "(doc/performance.md);");
          else if (caps.calibration)
            notes += str(" sequential chosen: across ", caps.nodes.summary(), " the calibration gave no "
                         "reduce-scatter rate to choose by;");
          else
            notes += str(" sequential chosen: across ", caps.nodes.summary(), " the reductions' choice needs the "
                         "link's calibration;");
        } else if (model_applies && calibrate && caps.calibration) {
          // A backward or bidirectional direction asked for is a ring's.
          const auto env_direction = env.find("WEAVE_DIRECTION");
          const bool ring_asked =
              (enum_value(desc.direction) != WEAVE_DIRECTION_AUTO && enum_value(desc.direction) != WEAVE_DIRECTION_FORWARD) ||
              (enum_value(desc.direction) == WEAVE_DIRECTION_AUTO && env_direction != env.end() &&
               env_direction->second != "forward");
          std::vector<Algorithm> candidates{Algorithm::Ring};
          if (!ring_asked) {
            if (!scaled_rows_travel) candidates.push_back(Algorithm::Pipelined);
            if (reduction) candidates.push_back(Algorithm::Direct);
            if (caps.nodes.nodes > 1 && caps.nodes.ranks_per_node() > 1 && !scaled_rows_travel)
              candidates.push_back(Algorithm::Hierarchical);
          } else {
            notes += " the model weighs the ring alone against the sequential plan: a ring direction was asked for;";
          }
          const int asked_chunks = asked_chunks_per_shard(desc, env);
          // What the measured rules run: on the host the ring (which beat the
          // sequential plan wherever it was measured, doc/performance.md);
          // across nodes nothing was measured.
          const Algorithm incumbent = r.backend == Backend::Host ? Algorithm::Ring : Algorithm::Sequential;
          // Host ranks without a spare core move bytes with the cores BLAS
          // uses: overlap hides nothing there.
          Calibration measured = *caps.calibration;
          if (r.backend == Backend::Host && caps.cores_per_rank < 2) measured.overlap_efficiency = 0;
          const ModelChoice choice =
              choose_by_model(problem, reduce_flags, candidates, asked_chunks,
                              default_chunks(problem, r.backend, Algorithm::Ring, false), measured, caps.nodes, incumbent,
                              mode == Calibrate::Always ? std::numeric_limits<double>::infinity() : kTrialBand);
          const Candidate chosen = take_timed_or(choice, "the model's closest candidates");
          algorithm = static_cast<int>(chosen.algorithm);
          model_chunks = chosen.chunks;
          notes += str(" calibrated at plan creation: ", measured.summary(), ";");
        } else if (problem.operation == Operation::GemmAr && r.backend == Backend::Cuda && P > 2 &&
                   measured == Algorithm::Direct && k_per_peer < kDirectAllReduceMinKPerPeer &&
                   sequential_moves_no_more) {
          algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
          notes += str(" sequential chosen: GEMM-AR over ", P, " ranks with K = ", problem.k, " of ",
                       dtype_name(problem.a_type), " has ", k_per_peer,
                       " bf16-equivalent K per peer, below ", kDirectAllReduceMinKPerPeer,
                       ", where the direct all-reduce measured slower than a sequential plan moving the same bytes "
                       "(doc/performance.md);");
        } else if (problem.operation == Operation::GemmRs && r.backend == Backend::Cuda && P > 2 &&
                   measured == Algorithm::Direct && k_per_peer < kDirectReduceScatterMinKPerPeer &&
                   sequential_moves_no_more &&
                   direct_chunks_asked_or_default(desc, problem, env, *transport) == 1) {
          algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
          notes += str(" sequential chosen: GEMM-RS over ", P, " ranks with K = ", problem.k, " of ",
                       dtype_name(problem.a_type), " has ", k_per_peer, " bf16-equivalent K per peer, below ",
                       kDirectReduceScatterMinKPerPeer, ", and a product shard that travels in one chunk, where the "
                       "direct reduce-scatter measured slower than a sequential plan moving the same bytes "
                       "(doc/performance.md);");
        } else if (reduction && P > 1 && measured == Algorithm::Direct) {
          algorithm = WEAVE_ALGORITHM_DIRECT;
          notes += str(" direct chosen: the reductions' algorithm over the ", transport->title, " transport;");
        } else if (r.backend == Backend::Cuda && problem.group_size > 1 && measured == Algorithm::Sequential &&
                   (reduction || flops < transport->ag_gemm_ring_min_flops)) {
          algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
          notes += reduction ? str(" sequential chosen: over ", transport->title, " the reduction rings measured slower "
                                   "than the sequential plan (WEAVE_ALGORITHM=ring overrides);")
                             : str(" sequential chosen: over ", transport->title, " the ring paid only from ",
                                   transport->ag_gemm_ring_min_flops / 1e9, " GFLOP per rank, this is ", flops / 1e9,
                                   " (WEAVE_ALGORITHM=ring overrides);");
        }
        // The reductions across nodes: the rule above chose from one
        // calibrated rate, which cannot tell machines apart whose plans
        // move different bytes (doc/performance.md: the pipelined plan beat
        // the sequential one on every reduction of one 2-GPU machine and
        // lost on four of six of a 4-GPU one, both calibrated at 50 GB/s).
        // So the sequential, pipelined and (nodes of several ranks)
        // hierarchical plans are timed at plan creation where affordable,
        // each at the depth the model predicts fastest, and the fastest runs.
        if (reductions_across_nodes && calibrate && caps.calibration && !too_small) {
          std::vector<Algorithm> timed{Algorithm::Pipelined};
          if (several_per_node) timed.push_back(Algorithm::Hierarchical);
          ModelChoice choice = choose_by_model(problem, reduce_flags, timed, asked_chunks_per_shard(desc, env),
                                               default_chunks(problem, r.backend, Algorithm::Ring, false),
                                               *caps.calibration, caps.nodes, static_cast<Algorithm>(algorithm),
                                               std::numeric_limits<double>::infinity());
          with_one_pipelined_chunk(choice);
          const Candidate fastest = take_timed_or(choice, "the reductions' plans across nodes", false);
          if (caps.trials && !caps.trials->measured.empty()) {
            algorithm = static_cast<int>(fastest.algorithm);
            model_chunks = fastest.chunks;
          }
        }
        // A plan whose collective would sum 16-bit partial sums (asked for
        // with WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE) over a library that cannot
        // (MPI): the ring, which honours the flag with sums of its own.
        // (Asked for by name, such a plan is refused when its transport is
        // made, saying so.)
        if (reduction && P > 1 &&
            (algorithm == WEAVE_ALGORITHM_SEQUENTIAL || algorithm == WEAVE_ALGORITHM_PIPELINED)) {
          const ReductionWire wire = reduction_wire(problem, reduce_flags, static_cast<Algorithm>(algorithm));
          if (wire.summed_by_collective && dtype_size(wire.type) == 2 && transport->collectives == Collectives::Own &&
              !transport->own_collectives_sum_16_bit) {
            notes += str(" ring chosen: the ", algorithm_name(static_cast<Algorithm>(algorithm)), " plan's ",
                         transport->title, " collectives cannot sum the ", dtype_name(wire.type),
                         " partial sums WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE asks for;");
            algorithm = WEAVE_ALGORITHM_RING;
          }
        }
      }
    }
    // GEMM-RS whose A has scales shared by 128-row bands (128x128, MXFP8)
    // and whose ranks' rows of C start inside a band (the balanced split of
    // most M): every algorithm but the sequential one cuts op(A) at those
    // rows, which its scales cannot follow. Left to Weave (argument or
    // WEAVE_ALGORITHM), the plan multiplies op(A) whole instead; asked for
    // by name, the algorithm is refused when its schedule is built.
    if (enum_value(desc.algorithm) == WEAVE_ALGORITHM_AUTO && algorithm != WEAVE_ALGORITHM_SEQUENTIAL) {
      const int64_t cut = reduce_scatter_cut_inside_band(problem);
      if (cut >= 0) {
        algorithm = WEAVE_ALGORITHM_SEQUENTIAL;
        notes += str(" sequential chosen: A's scales (", scale_mode_name(problem.a_scale), ") cover 128-row bands "
                     "of op(A) and a rank's rows of C start at row ", cut, ", inside one; only the sequential plan "
                     "multiplies op(A) whole;");
      }
    }
    if (scaled_rows_travel && (algorithm == WEAVE_ALGORITHM_PIPELINED || algorithm == WEAVE_ALGORITHM_HIERARCHICAL))
      fail(WEAVE_ERROR_UNSUPPORTED, "the ", algorithm == WEAVE_ALGORITHM_PIPELINED ? "pipelined" : "hierarchical",
           " AG-GEMM gathers unscaled rows; ", problem.types(), problem.quantized() ? " quantized to a wire type" : "",
           " runs the ring or the sequential algorithm (their scales travel with the rows)");
    r.schedule.algorithm = static_cast<Algorithm>(algorithm);
    if (r.schedule.algorithm == Algorithm::Hierarchical && P > 1) {
      // Within each node, then between nodes: every node must hold the same
      // number of the group's ranks (a rank of one local index on each).
      NodeLayout nodes = caps.nodes;
      if (nodes.node_of_rank.empty()) nodes.node_of_rank.assign(static_cast<std::size_t>(P), 0);  // not found: one node
      if (static_cast<int>(nodes.node_of_rank.size()) != P)
        fail(WEAVE_ERROR_INTERNAL, "a node layout of ", nodes.node_of_rank.size(), " ranks for a group of ", P);
      if (nodes.ranks_per_node() == 0)
        fail(WEAVE_ERROR_UNSUPPORTED, "a hierarchical plan needs the same number of the group's ranks on every node; "
             "this group spans ", nodes.summary(), "; use the pipelined or ring algorithm");
      r.schedule.node_of_rank = nodes.node_of_rank;
    }
    if (P == 1) {
      r.schedule.algorithm = Algorithm::Sequential;
      notes += " one rank: local GEMM, nothing to communicate;";
    }
    // The sequential and pipelined algorithms' collectives, where the
    // transport hands them to NCCL, need NCCL in the build.
    const bool collectives = r.schedule.algorithm == Algorithm::Sequential || r.schedule.algorithm == Algorithm::Pipelined;
    if (collectives && P > 1 && transport->collectives == Collectives::Nccl) {
      const TransportDescription* nccl = find_transport(caps, Transport::Nccl);
      if (!nccl || !nccl->compiled)
        fail(WEAVE_ERROR_NOT_COMPILED, "the ", algorithm_name(r.schedule.algorithm), " algorithm over the ",
             transport->title, " transport runs its collectives over NCCL, which is not compiled into this Weave; "
             "rebuild with -DWEAVE_ENABLE_NCCL=ON, or use an algorithm of point-to-point transfers (ring, direct)");
    }

    // Direction and chunks.
    const int asked_direction = enum_value(desc.direction);
    int direction = asked_direction;
    bool direction_chosen_here = false;  // neither the caller nor the environment named one
    if (direction == WEAVE_DIRECTION_AUTO) {
      weave_direction_t from_env = WEAVE_DIRECTION_AUTO;
      if (env_choice<weave_direction_t>(env, "WEAVE_DIRECTION",
                                        {{"forward", WEAVE_DIRECTION_FORWARD},
                                         {"backward", WEAVE_DIRECTION_BACKWARD},
                                         {"bidirectional", WEAVE_DIRECTION_BIDIRECTIONAL}},
                                        &from_env))
        direction = from_env;
      else {
        // Device rings run both ways: AG-GEMM sends each shard the short way
        // round, reductions send half of every shard each way.
        direction = r.backend == Backend::Cuda ? WEAVE_DIRECTION_BIDIRECTIONAL : WEAVE_DIRECTION_FORWARD;
        direction_chosen_here = true;
      }
    }
    if (direction < WEAVE_DIRECTION_FORWARD || direction > WEAVE_DIRECTION_BIDIRECTIONAL)
      fail(WEAVE_ERROR_INVALID_VALUE, "direction = ", asked_direction, " is not a weave_direction_t");
    r.schedule.direction = static_cast<Direction>(direction);
    if (r.schedule.algorithm == Algorithm::Direct || r.schedule.algorithm == Algorithm::Pipelined ||
        r.schedule.algorithm == Algorithm::Hierarchical) {
      // There is no ring to turn: the direct algorithm's step s sends to rank
      // r+s and receives from r-s, the pipelined one runs collectives, the
      // hierarchical one exchanges within nodes and between them.
      if (asked_direction != WEAVE_DIRECTION_AUTO && asked_direction != WEAVE_DIRECTION_FORWARD)
        fail(WEAVE_ERROR_UNSUPPORTED, "direction = ", asked_direction, " is for rings; the ",
             algorithm_name(r.schedule.algorithm), " algorithm has no direction (leave direction automatic)");
      r.schedule.direction = Direction::Forward;
    }

    // A transport that reads its peers' memory sums the direct algorithm's
    // products where they were made, in the pass that finishes C (PeerSum
    // steps); GEMM-AR then gathers the finished rows the same way, or, over
    // few ranks, reads every rank's whole product at once (one-shot).
    // Peer sums read products in C's type; float32 products asked for
    // (WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE, 16-bit C) travel as messages.
    const bool wider_products = (desc.flags & WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE) &&
                                dtype_size(accumulation_type(problem.dtype)) > dtype_size(problem.dtype);
    const bool peer_sums =
        reduction && transport->reads_peer_memory && r.schedule.algorithm == Algorithm::Direct && !wider_products;
    r.schedule.peer_sums = peer_sums;
    if (transport->reads_peer_memory && r.schedule.algorithm == Algorithm::Direct && wider_products && reduction)
      notes += str(" products not summed where they were made: the ", transport->title, " transport reads them in ",
                   dtype_name(problem.dtype), " and WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE asks for ",
                   dtype_name(accumulation_type(problem.dtype)), ", so they travel as messages;");
    // The direct GEMM-AR over messages may run one-shot too
    // (reduction_one_shot.cpp), when asked for: over two ranks it sends the
    // same bytes as two-shot and no transfer waits for a sum, yet over the
    // copy engines of 2 H100s it measured the same as two-shot within the
    // runs' noise (-16% to +3%, doc/performance.md), so two-shot, measured
    // longer, stays the default there.
    bool one_shot = peer_sums && P <= kOneShotAllReduceMaxRanks;
    const bool shots_asked =
        env_choice<bool>(env, "WEAVE_ALL_REDUCE", {{"one_shot", true}, {"two_shot", false}}, &one_shot);
    if (r.schedule.algorithm == Algorithm::Direct && problem.operation == Operation::GemmAr && P > 1) {
      if (shots_asked)
        notes += str(" ", one_shot ? "one" : "two", "-shot all-reduce (WEAVE_ALL_REDUCE);");
      else if (peer_sums)
        notes += one_shot ? str(" one-shot all-reduce: every rank reads the others' products over ", P, " ranks;")
                          : str(" two-shot all-reduce: owners sum their rows, then every rank reads them;");
      else
        notes += " two-shot all-reduce: owners sum their rows, then send them to every rank "
                 "(WEAVE_ALL_REDUCE=one_shot: every rank sends its whole product and sums all of C);";
      r.schedule.all_reduce_one_shot = one_shot;
      // Two-shot over messages: the all-gather after the whole
      // reduce-scatter (ScheduleOptions::all_gather_lag), unless
      // WEAVE_ALL_GATHER_LAG asks for it pipelined behind, which measured
      // no faster on 2 H200s (doc/performance.md).
      if (!one_shot && !peer_sums) {
        if (env_choice<int>(env, "WEAVE_ALL_GATHER_LAG",
                            {{"after_reduce", kGatherAfterReduce}, {"1", 1}, {"2", 2}},
                            &r.schedule.all_gather_lag))
          notes += r.schedule.all_gather_lag == kGatherAfterReduce
                       ? std::string(" all-gather after the whole reduce-scatter (WEAVE_ALL_GATHER_LAG);")
                       : str(" all-gather of each finished chunk ", r.schedule.all_gather_lag,
                             " chunk(s) behind the reduce-scatter (WEAVE_ALL_GATHER_LAG);");
      }
    }
    // Direct reductions over messages: the own product summed with the
    // received ones in one pass, or added by its GEMM onto them
    // (ScheduleOptions::own_product_accumulates). Over two ranks with C
    // row-major and products in C's type, the own GEMM reads the one
    // received product as its addend and no pass sums the chunk
    // (reduction_direct.cpp): measured faster on 2 H200s over the copy
    // engines from the shard sizes kOwnGemmAddsFromBytes* (planner.hpp says
    // by how much), slower on smaller shards, where the own GEMMs would wait
    // for transfers that are a larger part of the time. So it is the default
    // there; WEAVE_OWN_PRODUCT chooses either way.
    bool own_gemm_adds_received = false;
    int64_t shard_bytes = 0;
    if (reduction && r.schedule.algorithm == Algorithm::Direct && !peer_sums && !r.schedule.all_reduce_one_shot) {
      const bool can_add =
          own_gemm_can_add_received(problem, wider_products ? accumulation_type(problem.dtype) : problem.dtype);
      shard_bytes = checked_mul(checked_mul(problem.m_split.max_count(), problem.n, "a product shard's elements"),
                                static_cast<int64_t>(dtype_size(problem.dtype)), "a product shard's bytes");
      bool accumulates = false;
      if (env_choice<bool>(env, "WEAVE_OWN_PRODUCT", {{"summed", false}, {"accumulates", true}}, &accumulates)) {
        notes += accumulates ? " own products added by their GEMMs onto the received products (WEAVE_OWN_PRODUCT);"
                             : " own products summed with the received ones in one pass (WEAVE_OWN_PRODUCT);";
      } else {
        const int64_t from_bytes = problem.operation == Operation::GemmAr ? kOwnGemmAddsFromBytesAllReduce
                                                                          : kOwnGemmAddsFromBytesReduceScatter;
        accumulates = can_add && r.backend == Backend::Cuda && transport->sms == SmUse::None &&
                      transport->progression == Progression::StreamOrdered && shard_bytes >= from_bytes;
        if (accumulates)
          notes += str(" own products added by their GEMMs onto the received ones (", shard_bytes >> 20,
                       " MiB product shards over two ranks, from ", from_bytes >> 20, " MiB: measured faster);");
      }
      r.schedule.own_product_accumulates = accumulates;
      own_gemm_adds_received = accumulates && can_add;
      // GEMM-AR's last chunk in bands (ScheduleOptions::tail_bands):
      // WEAVE_TAIL_BANDS, else the measured kTailBands (FP8 A:
      // kTailBandsFp8).
      if (own_gemm_adds_received && problem.operation == Operation::GemmAr) {
        const bool fp8 = dtype_size(problem.a_type) == 1;
        r.schedule.tail_bands = static_cast<int>(
            env_integer(env, "WEAVE_TAIL_BANDS", fp8 ? kTailBandsFp8 : kTailBands, 1, kMaxTailBands));
        if (r.schedule.tail_bands > 1)
          notes += str(" the last chunk's own GEMM and finished rows in ", r.schedule.tail_bands, " bands",
                       env.count("WEAVE_TAIL_BANDS") ? " (WEAVE_TAIL_BANDS)"
                                                     : " (measured faster than one for 16-bit A on 2 H200s)",
                       ";");
      }
    }
    require_count("chunks_per_shard", desc.chunks_per_shard, kMaxChunksPerShard, "the chunks Weave cuts a shard into");
    int chunks = asked_chunks_per_shard(desc, env);
    // A bidirectional reduction ring sends half of every shard each way, so it
    // needs two chunks at least; AG-GEMM sends whole shards either way.
    bool halves =
        r.schedule.direction == Direction::Bidirectional && reduction && r.schedule.algorithm == Algorithm::Ring;
    const bool chunks_asked_for = desc.chunks_per_shard > 0;
    if (chunks == 0) {
      chunks = model_chunks > 0 && r.schedule.algorithm != Algorithm::Sequential
                   ? model_chunks
                   : default_chunks(problem, r.backend, r.schedule.algorithm, peer_sums,
                                    r.schedule.all_reduce_one_shot);
      // With no pass to sum a chunk, finer chunks of large shards shorten
      // what follows the last GEMM (its chunk's transfer, for GEMM-AR):
      // chunks of kOwnGemmAddsChunkBytes, at most kOwnGemmAddsMaxChunks;
      // and two at least, so that the own GEMMs do not wait for a whole
      // shard's transfer.
      if (own_gemm_adds_received && r.backend == Backend::Cuda) {
        const int finer = static_cast<int>(std::max<int64_t>(
            kOwnGemmAddsMinChunks, std::min<int64_t>(kOwnGemmAddsMaxChunks, shard_bytes / kOwnGemmAddsChunkBytes)));
        if (finer > chunks) {
          notes += str(" ", finer, " chunks per shard: ", shard_bytes >> 20, " MiB product shards added by the own "
                       "GEMMs, in ", kOwnGemmAddsMinChunks, " chunks at least and of ", kOwnGemmAddsChunkBytes >> 20,
                       " MiB at most (measured faster);");
          chunks = finer;
        }
      }
    }
    if (halves && chunks < 2 && direction_chosen_here) {
      // Whole shards were asked for (argument or WEAVE_CHUNKS) and the
      // direction was left to us: a forward ring honours both.
      r.schedule.direction = Direction::Forward;
      halves = false;
      notes += " forward ring: one chunk per shard was asked for, and a bidirectional ring needs two;";
    }
    if (halves && chunks < 2) {
      if (chunks_asked_for)
        fail(WEAVE_ERROR_UNSUPPORTED, "a bidirectional GEMM-RS/GEMM-AR ring sends half of every shard each way and "
             "needs chunks_per_shard >= 2, got ", desc.chunks_per_shard);
      chunks = 2;
    }
    r.schedule.chunks_per_shard = chunks;
  }

  require_count("compute_streams", desc.compute_streams, kMaxComputeStreams, "the compute streams a plan runs");
  int lanes = desc.compute_streams;
  if (lanes == 0) lanes = static_cast<int>(env_integer(env, "WEAVE_COMPUTE_STREAMS", 0, 1, kMaxComputeStreams));
  // Two compute streams let the direct algorithm's sums and the rings'
  // epilogues run beside GEMMs. For AG-GEMM one stream and two measured the
  // same within 1.6% on every benchmarked shape (doc/performance.md), so it
  // keeps the common default.
  if (lanes == 0) lanes = r.backend == Backend::Cuda ? 2 : 1;
  if (r.backend == Backend::Host) lanes = 1;  // one thread issues host work
  r.schedule.compute_lanes = lanes;

  // GPU streams: communication at the device's highest priority by default,
  // so a transfer's kernels (NCCL's, the copy engines' flag writes) are not
  // queued behind GEMM blocks; WEAVE_COMM_PRIORITY=normal gives every stream
  // the default priority.
  if (env_choice<bool>(env, "WEAVE_COMM_PRIORITY", {{"high", true}, {"normal", false}}, &r.comm_high_priority) &&
      !r.comm_high_priority && r.backend == Backend::Cuda)
    notes += " communication streams at normal priority (WEAVE_COMM_PRIORITY);";

  // SMs left to communication: a margin sizes the overlapped plans' GEMMs
  // for fewer SMs, so that kernels beside them (NCCL's, the sums) find free
  // SMs. None by default, measured on 4 H200s (doc/performance.md): over
  // copy engines, which move data without SMs, 8 and 16 SMs made the plans
  // up to 5% and 12% slower; over NCCL, 32 SMs sped the reduction rings by
  // 11-23%, but they stayed 1.6-2.3 x the sequential plan that NCCL plans
  // run by default, and slowed the large AG-GEMM rings by up to 16%.
  // A sequential plan runs nothing beside its GEMMs and keeps every SM.
  // A transport with an SM budget runs its kernels on that many CTAs, one
  // per SM, and the GEMMs leave those SMs free unless WEAVE_SM_MARGIN says
  // otherwise.
  // By default the fused sums, which read peers' memory, get more CTAs than
  // pushes (transfer_choice.hpp says why).
  const int default_ctas = r.schedule.peer_sums ? kSmTransportPeerSumCtas : kSmTransportPushCtas;
  r.sm_transport_ctas =
      static_cast<int>(env_integer(env, "WEAVE_SM_TRANSPORT_CTAS", default_ctas, 1, kSmTransportMaxCtas));
  const bool budget = transport->sms == SmUse::Budget && r.backend == Backend::Cuda;
  const bool margin_asked = env.count("WEAVE_SM_MARGIN") > 0;
  const int margin = margin_asked ? static_cast<int>(env_integer(env, "WEAVE_SM_MARGIN", 0, 0, INT_MAX))
                     : budget     ? r.sm_transport_ctas
                                  : 0;
  if (budget && r.schedule.algorithm != Algorithm::Sequential)
    notes += str(" SM transfers on ", r.sm_transport_ctas, " CTAs",
                 env.count("WEAVE_SM_TRANSPORT_CTAS") ? " (WEAVE_SM_TRANSPORT_CTAS)" : "", ";");
  if (margin > 0 && r.backend == Backend::Cuda) {
    if (r.schedule.algorithm == Algorithm::Sequential) {
      if (margin_asked) notes += " WEAVE_SM_MARGIN not applied: the sequential plan runs nothing beside its GEMMs;";
    } else {
      r.gemm_sm_margin = margin;
      notes += margin_asked ? str(" GEMMs leave ", margin, " SMs free (WEAVE_SM_MARGIN);")
                            : str(" GEMMs leave ", margin, " SMs free for the ", transport->title, " transport;");
    }
  }

  // cuBLASLt's algorithms timed at plan creation, where asked for (not by
  // default: not measured to pay yet, doc/performance.md).
  if (env_choice<bool>(env, "WEAVE_GEMM_TUNING", {{"on", true}, {"off", false}}, &r.gemm_tuning) && r.gemm_tuning &&
      r.backend == Backend::Cuda)
    notes += " GEMM algorithms chosen by timing cuBLASLt's candidates (WEAVE_GEMM_TUNING);";
  if (r.backend != Backend::Cuda) r.gemm_tuning = false;
  if (env_choice<bool>(env, "WEAVE_FP8_GEMM", {{"cutlass", true}, {"cublaslt", false}}, &r.cutlass_fp8_gemm) &&
      r.cutlass_fp8_gemm && r.backend == Backend::Cuda)
    notes += " row-wise scaled FP8 GEMMs on CUTLASS's kernel where it fits (WEAVE_FP8_GEMM);";
  if (r.backend != Backend::Cuda) r.cutlass_fp8_gemm = false;
  // The CUTLASS kernel's swizzle, for measuring (1, 2, 4 or 8).
  if (env_choice<int>(env, "WEAVE_CUTLASS_SWIZZLE", {{"1", 1}, {"2", 2}, {"4", 4}, {"8", 8}}, &r.cutlass_swizzle) &&
      r.cutlass_fp8_gemm)
    notes += str(" CUTLASS's FP8 kernel with swizzle ", r.cutlass_swizzle, " (WEAVE_CUTLASS_SWIZZLE);");
  if (!r.cutlass_fp8_gemm) r.cutlass_swizzle = 0;

  // Device-side waits for peers' flags: bounded kernels unless the stream
  // memory operations are asked for (WEAVE_DEVICE_WAIT=stream).
  if (env_choice<DeviceWait>(env, "WEAVE_DEVICE_WAIT",
                             {{"bounded", DeviceWait::Bounded}, {"stream", DeviceWait::StreamMemoryOperation}},
                             &r.device_wait) &&
      r.device_wait == DeviceWait::StreamMemoryOperation && transport->progression == Progression::StreamOrdered &&
      transport->reach == Reach::OneNodePeerAccess)
    notes += " device waits on stream memory operations, unbounded (WEAVE_DEVICE_WAIT);";

  // Where the copy engines' transfers complete: a batch's on the
  // communication stream, unless WEAVE_TRANSFER_COMPLETION=own_streams asks
  // for each on a stream of the transport's own (its GEMM then waits for its
  // chunk alone and later batches start at once, but the waits, kernels
  // launched early, hold SMs beside the GEMMs: slower in 6 of 9 cases
  // measured on 4 H200s, doc/performance.md).
  if (env_choice<bool>(env, "WEAVE_TRANSFER_COMPLETION",
                       {{"own_streams", true}, {"communication_stream", false}},
                       &r.completions_on_transport_streams) &&
      r.completions_on_transport_streams && transport->id == Transport::CopyEngine)
    notes += " transfers complete on the copy-engine transport's own streams (WEAVE_TRANSFER_COMPLETION);";

  // How the copy engines take a batch's sends to several peers (the direct
  // AG-GEMM, WEAVE_GEMM's gathers, a bidirectional ring's two directions):
  // CopyEngineSends.
  if (env_choice<CopyEngineSends>(env, "WEAVE_COPY_ENGINE_SENDS",
                                  {{"per_receiver", CopyEngineSends::PerReceiver},
                                   {"in_order", CopyEngineSends::InOrder}},
                                  &r.copy_engine_sends) &&
      r.copy_engine_sends == CopyEngineSends::InOrder && transport->id == Transport::CopyEngine)
    notes += " copy-engine sends one at a time, in order (WEAVE_COPY_ENGINE_SENDS);";
  // When the copy engines' dependency-free receives clear their senders:
  // clears_at_start_measured_faster, unless WEAVE_CLEAR_TO_SEND says.
  r.clears_at_start = clears_at_start_measured_faster(problem.operation, problem.group_size);
  if (env_choice<bool>(env, "WEAVE_CLEAR_TO_SEND", {{"at_start", true}, {"per_step", false}}, &r.clears_at_start) &&
      transport->id == Transport::CopyEngine)
    notes += r.clears_at_start ? " clears to send at the start of every execute (WEAVE_CLEAR_TO_SEND);"
                               : " clears to send when each step is due (WEAVE_CLEAR_TO_SEND);";
  // What the host enqueues first in an execute over a stream-ordered
  // transport (exec::IssueOrder): issue_order_measured_fastest, unless
  // WEAVE_ISSUE_ORDER says.
  const MeasuredIssueOrder measured_order = issue_order_measured_fastest(problem.group_size);
  r.issue_order = transport->issue_order_measured ? measured_order.order : IssueOrder::TransfersFirst;
  const bool order_asked = env_choice<IssueOrder>(env, "WEAVE_ISSUE_ORDER",
                                                  {{"transfers_first", IssueOrder::TransfersFirst},
                                                   {"gemms_first", IssueOrder::GemmsFirst},
                                                   {"alternate", IssueOrder::Alternate}},
                                                  &r.issue_order);
  if (r.backend == Backend::Cuda && problem.group_size > 1 && transport->progression == Progression::StreamOrdered) {
    const char* what = "every ready transfer enqueued before the next compute step";
    if (r.issue_order == IssueOrder::GemmsFirst) what = "GEMMs that wait for nothing enqueued before the transfers";
    if (r.issue_order == IssueOrder::Alternate) what = "a batch of transfers and a compute step enqueued in turn";
    std::string why = "WEAVE_ISSUE_ORDER";
    if (!order_asked && transport->issue_order_measured)
      why = str("measured fastest over ", measured_order.measured_ranks, " ranks, doc/performance.md");
    else if (!order_asked)
      why = str("the other orders not measured over ", transport->title);
    notes += str(" issue order: ", what, " (", why, ");");
  }

  r.schedule.gathered_output = (desc.flags & WEAVE_FLAG_GATHERED_OUTPUT) != 0;
  set_reduction_wire_options(desc.flags, *transport, r.schedule);

  // Host progress.
  int progress = enum_value(desc.progress);
  if (progress == WEAVE_PROGRESS_AUTO) {
    weave_progress_t from_env = WEAVE_PROGRESS_AUTO;
    if (!env_choice<weave_progress_t>(env, "WEAVE_PROGRESS",
                                      {{"tiles", WEAVE_PROGRESS_TILES}, {"thread", WEAVE_PROGRESS_THREAD}}, &from_env)) {
      // A progress thread moves data while BLAS computes, but only helps
      // when it has a core of its own and MPI lets it call in.
      const bool mpi_allows = !transport->calls_mpi || caps.mpi_thread_level >= MPI_THREAD_SERIALIZED;
      from_env = mpi_allows && caps.cores_per_rank >= 2.0 ? WEAVE_PROGRESS_THREAD : WEAVE_PROGRESS_TILES;
    }
    progress = from_env;
  }
  if (progress != WEAVE_PROGRESS_TILES && progress != WEAVE_PROGRESS_THREAD)
    fail(WEAVE_ERROR_INVALID_VALUE, "progress = ", enum_value(desc.progress), " is not a weave_progress_t");
  r.progress = static_cast<ProgressMode>(progress);
  if (r.progress == ProgressMode::Thread && transport->calls_mpi && caps.mpi_thread_level < MPI_THREAD_SERIALIZED)
    fail(WEAVE_ERROR_UNSUPPORTED, "WEAVE_PROGRESS_THREAD calls MPI from a second thread and needs MPI initialized "
         "with MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE (MPI_Init_thread); this process has level ",
         caps.mpi_thread_level);

  // Timeout.
  const auto weave_timeout = env.find("WEAVE_TIMEOUT");
  r.timeout = resolve_timeout(desc.timeout_ms, weave_timeout == env.end() ? nullptr : weave_timeout->second.c_str());
  return r;
}

bool bands_measured_faster(DType dtype, bool line_grid) {
  return sixteen_bit(dtype) || (line_grid && dtype == DType::F64);
}

double gemm_flops_per_received_byte(const Problem& p) {
  const GridOperands& g = p.grid;
  const double k = static_cast<double>(p.k);
  const double rows = static_cast<double>(p.m) / g.prows, cols = static_cast<double>(p.n) / g.pcols;
  const double received = rows * k * static_cast<double>(dtype_size(p.a_type)) * (g.pcols - 1) / g.pcols +
                          cols * k * static_cast<double>(dtype_size(p.b_type)) * (g.prows - 1) / g.prows;
  return received > 0 ? 2 * rows * cols * k / received : 0;
}

double line_grid_packing_ratio(const Problem& p, int64_t panel_width) {
  const GridOperands& g = p.grid;
  if ((g.prows == 1) == (g.pcols == 1)) return 0;  // a single rank, or a 2-D grid
  if (p.op_a != Op::N || p.op_b != Op::N) return 0;
  if (!g.a.rows.aligned_with(g.c.rows) || !g.b.cols.aligned_with(g.c.cols)) return 0;
  // One grid column: every rank holds all of op(A)'s K; one grid row: all of op(B)'s.
  const bool a_held = g.pcols == 1;
  const std::vector<Panel> panels = summa_panels(g.a.cols, g.b.rows, panel_width);
  if (std::all_of(panels.begin(), panels.end(), [&](const Panel& panel) { return panel.contiguous(a_held); }))
    return 0;  // nothing is packed
  const double M = static_cast<double>(p.m), N = static_cast<double>(p.n);
  const double a_size = static_cast<double>(dtype_size(p.a_type)), b_size = static_cast<double>(dtype_size(p.b_type));
  // Per rank, K cancels: the held block (M / P_r rows of op(A), or N / P_c
  // columns of op(B)) against the (P - 1) / P of the other's K it receives.
  const double packed = a_held ? M * a_size : N * b_size;
  const double received = a_held ? (g.prows - 1) * N * b_size : (g.pcols - 1) * M * a_size;
  return received > 0 ? packed / received : 0;
}

}  // namespace weave::internal::plan
