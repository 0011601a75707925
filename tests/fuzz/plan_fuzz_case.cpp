#include "plan_fuzz_case.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "fuzz_input.hpp"
#include "weave/weave.h"

namespace weave_fuzz {
namespace {

constexpr int64_t kInt64Max = INT64_MAX;
// Local elements (all buffers of one rank together) up to which an accepted
// plan is executed.
constexpr int64_t kExecuteBudget = int64_t{1} << 15;
// Elements of guard values before and after every buffer.
constexpr int64_t kGuardElements = 16;
constexpr unsigned char kGuardByte = 0xA5;

int g_rank = 0, g_size = 1;

[[noreturn]] void violated(const std::string& what) {
  std::fprintf(stderr, "weave fuzz: rank %d: invariant violated: %s\n", g_rank, what.c_str());
  std::fflush(stderr);
  std::abort();
}

// ---------------------------------------------------------------------------
// The C API's structs, each made in this one function (in C++ the leading
// struct_size takes its default, sizeof the struct).
template <class Struct>
Struct new_struct() {
  return Struct{};
}

// An int stored in an enum-typed field, as a C caller may: through its bytes,
// so that values outside the enum's range are not undefined behaviour here.
template <class Enum>
void store(Enum& field, int value) {
  static_assert(sizeof(Enum) == sizeof(int), "C API enums are int-sized");
  std::memcpy(&field, &value, sizeof value);
}

template <class Enum>
int load(const Enum& field) {
  int value = 0;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

// ---------------------------------------------------------------------------
// Values the bytes pick from: the common ones first, then the absurd.

int64_t size_value(FuzzInput& in) {
  static const int64_t table[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 31, 64,
                                  -1, -7, INT32_MAX, int64_t{1} << 31, int64_t{1} << 32, (int64_t{1} << 32) + 1,
                                  int64_t{1} << 40, int64_t{1} << 62, kInt64Max, INT64_MIN};
  const uint8_t b = in.byte();
  if (b == 255) return static_cast<int64_t>(in.u64());
  return table[b % (sizeof table / sizeof table[0])];
}

int64_t ld_value(FuzzInput& in) {
  static const int64_t table[] = {0, 0, 0, 1, 2, 3, 5, 8, 9, 17, 64, -1, INT32_MAX, int64_t{1} << 32,
                                  int64_t{1} << 61, int64_t{1} << 62, kInt64Max};
  const uint8_t b = in.byte();
  if (b == 255) return static_cast<int64_t>(in.u64());
  return table[b % (sizeof table / sizeof table[0])];
}

// A value of an enumeration whose values run from `first` to `last` (0 is
// included where it means "not set"), or one outside it.
int enum_value(FuzzInput& in, int first, int last) {
  static const int wild[] = {-1, INT_MIN, INT_MAX, 1 << 16, 255, 7, 9, 100};
  const uint8_t b = in.byte();
  if (b < 224) return first + b % (last - first + 1);
  if (b == 255) return static_cast<int>(in.u32());
  return wild[b % (sizeof wild / sizeof wild[0])];
}

int32_t count_value(FuzzInput& in) {
  static const int32_t table[] = {0, 0, 1, 2, 3, 4, 5, 8, 64, 65, 1024, 1025, -1, INT32_MAX, INT32_MIN};
  return in.pick(table);
}

// ---------------------------------------------------------------------------
// Status checks.

bool documented(int status) { return status >= WEAVE_ERROR_NULL_ARGUMENT && status < WEAVE_ERROR_INTERNAL; }

// A call's status: success, or a documented status with a message.
void check_status(weave_status_t status, const char* call) {
  const int s = load(status);
  if (s == WEAVE_SUCCESS) return;
  const std::string message = weave_last_error();
  if (!documented(s))
    violated(std::string(call) + " returned status " + std::to_string(s) + " (" + weave_status_string(status) +
             "): " + message);
  if (message.empty()) violated(std::string(call) + " failed with " + weave_status_string(status) + " and no message");
}

// A collective creation call: the same status on every rank.
void check_collective_status(weave_status_t status, const char* call) {
  check_status(status, call);
  int mine = load(status), low = 0, high = 0;
  MPI_Allreduce(&mine, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &high, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (low != high)
    violated(std::string(call) + " returned different statuses on different ranks (" + std::to_string(low) + " and " +
             std::to_string(high) + "): " + weave_last_error());
}

bool all_ranks(bool mine) {
  int local = mine ? 1 : 0, all = 0;
  MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

// ---------------------------------------------------------------------------
// The environment variable one case sets (the same on every rank).

struct ScopedVariable {
  std::string name;
  bool set = false;
  ScopedVariable(FuzzInput& in) {
    static const char* const names[] = {"WEAVE_CHUNKS",    "WEAVE_TIMEOUT",         "WEAVE_ALGORITHM",
                                        "WEAVE_TRANSPORT", "WEAVE_DIRECTION",       "WEAVE_PROGRESS",
                                        "WEAVE_SM_MARGIN", "WEAVE_COMPUTE_STREAMS", "WEAVE_COMM_PRIORITY",
                                        "WEAVE_PANEL_WIDTH"};
    static const char* const values[] = {"1",         "2",          "0",          "1024",        "1025",
                                         "-1",        "4294967297", "10000000000", "3153600000", "3153600001",
                                         "99999999999999999999",    "ring",       "sequential",  "direct",
                                         "mpi",       "ucx",        "nccl",       "forward",     "bidirectional",
                                         "thread",    "tiles",      "high",       "x",           "2x",
                                         "summa"};
    const uint8_t b = in.byte();
    if (b < 160) return;  // most cases leave the environment alone
    name = names[b % (sizeof names / sizeof names[0])];
    setenv(name.c_str(), in.pick(values), 1);
    set = true;
  }
  ~ScopedVariable() {
    if (set) unsetenv(name.c_str());
  }
  ScopedVariable(const ScopedVariable&) = delete;
  ScopedVariable& operator=(const ScopedVariable&) = delete;
};

// ---------------------------------------------------------------------------
// Matrices.

struct Matrix {
  weave_matrix_desc_t desc = new_struct<weave_matrix_desc_t>();
  std::vector<int64_t> row_counts, col_counts;  // what desc points to
  weave_matrix_t handle = nullptr;
  int64_t local_rows = 0, local_cols = 0, ld = 1, elements = 0;
  int element_size = 0;
};

int element_size_of(int dtype) {
  switch (dtype) {
    case WEAVE_FLOAT32: return 4;
    case WEAVE_FLOAT64: return 8;
    case WEAVE_FLOAT16:
    case WEAVE_BFLOAT16: return 2;
    case WEAVE_FLOAT8_E4M3:
    case WEAVE_FLOAT8_E5M2: return 1;
    case WEAVE_COMPLEX64: return 8;
    case WEAVE_COMPLEX128: return 16;
  }
  return 0;
}

bool is_fp8(int dtype) { return dtype == WEAVE_FLOAT8_E4M3 || dtype == WEAVE_FLOAT8_E5M2; }
bool is_complex(int dtype) { return dtype == WEAVE_COMPLEX64 || dtype == WEAVE_COMPLEX128; }

// Size of a group of the grid, or of the world for a group that is none.
int group_size_of(weave_grid_t grid, int group) {
  if (group < WEAVE_GROUP_GRID || group > WEAVE_GROUP_COLUMN) return g_size;
  weave_group_t kind = WEAVE_GROUP_GRID;
  store(kind, group);
  int size = g_size, rank = 0;
  if (weave_grid_group(grid, kind, &size, &rank) != WEAVE_SUCCESS) violated("weave_grid_group of a valid group failed");
  return size;
}

// Counts for `parts` parts (the array always holds one per world rank, as
// many as any distribution reads): none; one value from the size table for
// every part (as [INT64_MAX] x P); or an uneven split of `total` that sums
// right, drawn from one byte. Each mode reads the same bytes at any number
// of ranks, so a seed decodes alike at 1 and at 4.
void decode_counts(FuzzInput& in, int64_t total, int parts, std::vector<int64_t>& counts, const int64_t** field) {
  const uint8_t mode = in.byte() % 4;
  if (mode < 2) return;
  counts.assign(static_cast<size_t>(std::max(g_size, 1)), 0);
  if (mode == 2) {
    std::fill(counts.begin(), counts.end(), size_value(in));
  } else {
    const unsigned pattern = in.byte();
    int64_t left = total;
    for (int i = 0; i + 1 < parts; ++i) {
      counts[static_cast<size_t>(i)] = std::min<int64_t>(std::max<int64_t>(left, 0), (pattern * (i + 1) + i) % 9);
      left -= counts[static_cast<size_t>(i)];
    }
    counts[static_cast<size_t>(parts - 1)] = left;
  }
  *field = counts.data();
}

void decode_matrix(FuzzInput& in, weave_grid_t grid, int prows, int pcols, Matrix& m) {
  weave_matrix_desc_t& d = m.desc;
  d.rows = size_value(in);
  d.cols = size_value(in);
  store(d.dtype, enum_value(in, 0, 8));
  store(d.distribution, enum_value(in, 0, 5));
  store(d.group, enum_value(in, 0, 2));
  // The block-cyclic fields, read for BLOCK_CYCLIC matrices only (so inputs
  // of the other distributions decode as they always did).
  if (load(d.distribution) == WEAVE_DIST_BLOCK_CYCLIC) {
    static const int64_t blocks[] = {1, 1, 2, 3, 7, 32, 64, 0, -1};
    static const int32_t sources[] = {0, 0, 0, 1, 1, 2, -1, -2, 3, INT32_MAX, INT32_MIN};
    static const int64_t starts[] = {0, 0, 0, 0, 1, 5, 33, -1};
    // A table value, or (byte 255) any size.
    auto value_from = [&](const int64_t* table, std::size_t n) {
      const uint8_t b = in.byte();
      return b == 255 ? size_value(in) : table[b % n];
    };
    d.mb = value_from(blocks, sizeof blocks / sizeof blocks[0]);
    d.nb = value_from(blocks, sizeof blocks / sizeof blocks[0]);
    d.rsrc = in.pick(sources);
    d.csrc = in.pick(sources);
    d.row_start = value_from(starts, sizeof starts / sizeof starts[0]);
    d.col_start = value_from(starts, sizeof starts / sizeof starts[0]);
  }
  const int distribution = load(d.distribution), group = group_size_of(grid, load(d.group));
  const int row_parts = distribution == WEAVE_DIST_BLOCK_2D ? prows : group;
  const int col_parts = distribution == WEAVE_DIST_BLOCK_2D ? pcols : group;
  decode_counts(in, d.rows, row_parts, m.row_counts, &d.row_counts);
  decode_counts(in, d.cols, col_parts, m.col_counts, &d.col_counts);
  d.ld = ld_value(in);
  store(d.order, enum_value(in, 0, 1));
  store(d.memory, enum_value(in, 0, 1));
  // FP8 matrices need a scale mode (0, none, is an error for them). Read
  // for them only, so that inputs of the other types decode as they did.
  if (is_fp8(load(d.dtype))) store(d.scale_mode, enum_value(in, 0, 5));
  m.element_size = element_size_of(load(d.dtype));
}

// The local block of an accepted matrix, and what must hold for it.
void query_and_check_matrix(Matrix& m, int index) {
  const std::string name = "matrix " + std::to_string(index);
  int64_t row_offset = 0, col_offset = 0;
  check_status(weave_matrix_local_shape(m.handle, &m.local_rows, &m.local_cols), "weave_matrix_local_shape");
  check_status(weave_matrix_local_offset(m.handle, &row_offset, &col_offset), "weave_matrix_local_offset");
  check_status(weave_matrix_ld(m.handle, &m.ld), "weave_matrix_ld");
  check_status(weave_matrix_local_elements(m.handle, &m.elements), "weave_matrix_local_elements");
  const weave_matrix_desc_t& d = m.desc;
  int64_t row_end = 0, col_end = 0;
  // A block-cyclic rank's blocks lie apart, and its local array may begin
  // before the matrix (a submatrix): its extent is not a range of the matrix.
  const bool cyclic = load(d.distribution) == WEAVE_DIST_BLOCK_CYCLIC;
  if (cyclic ? (m.local_rows < 0 || m.local_cols < 0 || row_offset < 0 || col_offset < 0 || row_offset > d.rows ||
                col_offset > d.cols)
             : (m.local_rows < 0 || m.local_cols < 0 || row_offset < 0 || col_offset < 0 ||
                __builtin_add_overflow(row_offset, m.local_rows, &row_end) || row_end > d.rows ||
                __builtin_add_overflow(col_offset, m.local_cols, &col_end) || col_end > d.cols))
    violated(name + ": local block " + std::to_string(m.local_rows) + " x " + std::to_string(m.local_cols) + " at (" +
             std::to_string(row_offset) + ", " + std::to_string(col_offset) + ") is not inside the " +
             std::to_string(d.rows) + " x " + std::to_string(d.cols) + " matrix");
  const bool column_major = load(d.order) == WEAVE_ORDER_COLUMN_MAJOR;
  const int64_t minor = column_major ? m.local_rows : m.local_cols, major = column_major ? m.local_cols : m.local_rows;
  if (m.ld < 1 || (minor > 0 && major > 0 && m.ld < minor))
    violated(name + ": ld " + std::to_string(m.ld) + " is below the tight one, " + std::to_string(minor));
  int64_t extent = 0, bytes = 0;
  if (minor > 0 && major > 0) {
    if (__builtin_mul_overflow(m.ld, major - 1, &extent) || __builtin_add_overflow(extent, minor, &extent))
      violated(name + " was accepted, but its local extent ld * (" + std::to_string(major) + " - 1) + " +
               std::to_string(minor) + " with ld " + std::to_string(m.ld) + " overflows int64_t");
  }
  if (m.elements != extent)
    violated(name + ": weave_matrix_local_elements says " + std::to_string(m.elements) + ", the block spans " +
             std::to_string(extent));
  if (__builtin_mul_overflow(m.elements, static_cast<int64_t>(m.element_size), &bytes))
    violated(name + " was accepted, but its " + std::to_string(m.elements) + " local elements of " +
             std::to_string(m.element_size) + " bytes overflow int64_t");
}

// ---------------------------------------------------------------------------
// Plans.

struct PlanCase {
  weave_plan_desc_t desc = new_struct<weave_plan_desc_t>();
  int a = -1, b = -1, c = -1, bias = -1;  // matrix indices, -1: NULL
};

PlanCase decode_plan(FuzzInput& in, const std::vector<Matrix>& matrices) {
  PlanCase p;
  weave_plan_desc_t& d = p.desc;
  store(d.operation, enum_value(in, 0, 4));
  store(d.group, enum_value(in, 0, 2));
  store(d.op_a, enum_value(in, 0, 2));
  store(d.op_b, enum_value(in, 0, 2));
  const int n = static_cast<int>(matrices.size());
  auto matrix_index = [&](int null_weight) {
    const int pick = in.byte() % (n + null_weight);
    return pick < n && matrices[static_cast<size_t>(pick)].handle ? pick : -1;
  };
  p.a = matrix_index(1);
  p.b = matrix_index(1);
  p.c = matrix_index(1);
  p.bias = matrix_index(n + 2);
  d.a = p.a >= 0 ? matrices[static_cast<size_t>(p.a)].handle : nullptr;
  d.b = p.b >= 0 ? matrices[static_cast<size_t>(p.b)].handle : nullptr;
  d.c = p.c >= 0 ? matrices[static_cast<size_t>(p.c)].handle : nullptr;
  d.bias = p.bias >= 0 ? matrices[static_cast<size_t>(p.bias)].handle : nullptr;
  store(d.algorithm, enum_value(in, 0, 6));
  store(d.backend, enum_value(in, 0, 2));
  store(d.transport, enum_value(in, 0, 4));
  store(d.direction, enum_value(in, 0, 3));
  d.chunks_per_shard = count_value(in);
  d.compute_streams = count_value(in);
  store(d.progress, enum_value(in, 0, 2));
  static const int32_t timeouts[] = {0, 0, 120000, -1, 1, 1000, INT32_MAX, INT32_MIN};
  d.timeout_ms = in.pick(timeouts);
  // Over several ranks a short timeout would only measure how busy the
  // machine is; validation of every value is what one rank fuzzes.
  if (g_size > 1 && d.timeout_ms > 0 && d.timeout_ms < 60000) d.timeout_ms = 120000;
  static const int32_t wild_flags[] = {1 << 6, 1 << 20, -1, INT32_MIN};
  const uint8_t f = in.byte();
  d.flags = f < 224 ? (in.byte() & 63) : wild_flags[f % 4];
  // The wire type (AG-GEMM: what A's rows travel as), read last so that
  // inputs written before it existed decode as they did: mostly none.
  static const int wire_types[] = {0, 0, 0, 0, 0, WEAVE_FLOAT8_E4M3, WEAVE_BFLOAT16, WEAVE_FLOAT8_E5M2,
                                   WEAVE_FLOAT32, WEAVE_FLOAT16, WEAVE_COMPLEX64, -1, 100};
  store(d.wire_type, in.pick(wire_types));
  return p;
}

// The type A's rows travel as (AG-GEMM's wire type; A's own without one).
int wire_type_of(const weave_plan_info_t& info, const Matrix& a) {
  return load(info.wire_type) != 0 ? load(info.wire_type) : load(a.desc.dtype);
}

// Checks what the plan says of itself, and returns its info.
weave_plan_info_t check_plan(weave_plan_t plan, const PlanCase& p, const std::vector<Matrix>& matrices) {
  weave_plan_info_t info = new_struct<weave_plan_info_t>();
  check_status(weave_plan_get_info(plan, &info), "weave_plan_get_info");
  const char* text = nullptr;
  check_status(weave_plan_describe(plan, &text), "weave_plan_describe");
  if (!text || std::string(text).find("workspace") == std::string::npos)
    violated(std::string("weave_plan_describe gave \"") + (text ? text : "(null)") + "\"");
  auto in_range = [](int value, int first, int last) { return value >= first && value <= last; };
  const int algorithm = load(info.algorithm);
  if (!(in_range(algorithm, WEAVE_ALGORITHM_RING, WEAVE_ALGORITHM_HIERARCHICAL) || algorithm == WEAVE_ALGORITHM_SUMMA) ||
      !in_range(load(info.backend), WEAVE_BACKEND_HOST, WEAVE_BACKEND_CUDA) ||
      !in_range(load(info.transport), WEAVE_TRANSPORT_MPI, WEAVE_TRANSPORT_COPY_ENGINE) ||
      !in_range(load(info.direction), WEAVE_DIRECTION_FORWARD, WEAVE_DIRECTION_BIDIRECTIONAL) ||
      !in_range(load(info.progress), WEAVE_PROGRESS_TILES, WEAVE_PROGRESS_THREAD) ||
      !in_range(info.chunks_per_shard, 1, 1024) || !in_range(info.compute_streams, 1, 64) ||
      !in_range(info.group_size, 1, g_size) || !in_range(info.group_rank, 0, info.group_size - 1) || info.steps < 0)
    violated(std::string("weave_plan_get_info is out of range for the plan ") + text);
  const int64_t workspace = info.workspace_bytes;
  if (workspace < 0 || workspace % 256 != 0)
    violated("workspace of " + std::to_string(workspace) + " bytes: not a multiple of its 256-byte slices: " + text);
  const bool host = load(info.backend) == WEAVE_BACKEND_HOST;
  // A host plan over one rank gathers and sums nothing: it needs no
  // workspace, except that WEAVE_GEMM may move a bias into C's layout; a
  // GEMM-RS or GEMM-AR of 16-bit C forms alpha op(A) op(B) + beta C + bias
  // in a float32 copy of C's block and rounds once (unless its partial sums
  // are asked to travel in C's type); an AG-GEMM with a wire type quantizes
  // op(A) into the gathered layout, with a float32 scale per row; a complex
  // operand conjugated (op C) where BLAS cannot take it as it lies is
  // conjugated into a copy. At most those, each in 256-byte slices.
  const int operation = load(p.desc.operation);
  const Matrix& a = matrices[static_cast<size_t>(p.a)];
  const Matrix& c = matrices[static_cast<size_t>(p.c)];
  const int wire = wire_type_of(info, a);
  const int64_t a_rows = c.local_rows, a_k = load(p.desc.op_a) == WEAVE_OP_N ? a.local_cols : a.local_rows;
  // rows x cols x size bytes in 256-byte slices; false where that overflows.
  auto slices = [](int64_t rows, int64_t cols, int64_t size, int64_t& bytes) {
    return !__builtin_mul_overflow(rows, cols, &bytes) && !__builtin_mul_overflow(bytes, size, &bytes) &&
           !__builtin_add_overflow(bytes, int64_t{255}, &bytes) && ((bytes -= bytes % 256), true);
  };
  if (host && info.group_size == 1 && operation != WEAVE_GEMM) {
    const bool reduction = operation == WEAVE_GEMM_RS || operation == WEAVE_GEMM_AR;
    const bool sums_in_float32 = reduction && c.element_size == 2 && !(p.desc.flags & WEAVE_FLAG_REDUCE_IN_OUTPUT_TYPE);
    const bool quantizes = operation == WEAVE_AG_GEMM && wire != load(a.desc.dtype);
    int64_t allowed = 0, rows_bytes = 0, scale_bytes = 0;
    if (sums_in_float32 && !slices(c.local_rows, c.local_cols, 4, allowed))
      violated("a one-rank plan whose float32 copy of C's block overflows int64_t bytes was accepted: " +
               std::string(text));
    if (quantizes) {
      if (!slices(a_rows, a_k, element_size_of(wire), rows_bytes) || !slices(a_rows, 1, 4, scale_bytes) ||
          __builtin_add_overflow(rows_bytes, scale_bytes, &allowed))
        violated("a one-rank AG-GEMM whose quantized op(A) overflows int64_t bytes was accepted: " + std::string(text));
    }
    const Matrix& b = matrices[static_cast<size_t>(p.b)];
    for (const auto& [operand, op] : {std::pair<const Matrix*, int>{&a, load(p.desc.op_a)}, {&b, load(p.desc.op_b)}}) {
      const int type = load(operand->desc.dtype);
      int64_t copy = 0;
      if (op == WEAVE_OP_C && is_complex(type) &&
          (!slices(operand->local_rows, operand->local_cols, operand->element_size, copy) ||
           __builtin_add_overflow(allowed, copy, &allowed)))
        violated("a one-rank plan whose conjugated copy of an operand overflows int64_t bytes was accepted: " +
                 std::string(text));
    }
    if (workspace > allowed)
      violated("a host plan over one rank (nothing to gather or sum) has " + std::to_string(workspace) +
               " bytes of workspace where " + std::to_string(allowed) + " suffice: " + text);
  }
  if (host && info.group_size > 1 && load(p.desc.operation) == WEAVE_AG_GEMM) {
    // Every AG-GEMM algorithm gathers op(A), M x K, into the workspace, in
    // the type its rows travel as. C holds all M rows; op(A)'s local block
    // all K columns.
    const int64_t m = a_rows, k = a_k;
    int64_t gathered = 0;
    if (__builtin_mul_overflow(m, k, &gathered) ||
        __builtin_mul_overflow(gathered, static_cast<int64_t>(element_size_of(wire)), &gathered))
      violated("an AG-GEMM whose gathered op(A), " + std::to_string(m) + " x " + std::to_string(k) +
               ", overflows int64_t bytes was accepted: " + text);
    if (workspace < gathered)
      violated("AG-GEMM workspace of " + std::to_string(workspace) + " bytes cannot hold the gathered op(A) of " +
               std::to_string(gathered) + ": " + text);
  }
  return info;
}

// ---------------------------------------------------------------------------
// Execute on guarded buffers.

// One buffer of `elements` elements of one type with guards on both sides.
struct Guarded {
  std::vector<unsigned char> bytes;
  int64_t elements = 0;
  int element_size = 8;
  int dtype = WEAVE_FLOAT64;

  Guarded(int64_t n, int type) : elements(n), element_size(std::max(element_size_of(type), 1)), dtype(type) {
    bytes.assign(static_cast<size_t>((n + 2 * kGuardElements) * element_size), kGuardByte);
  }
  unsigned char* data() { return bytes.data() + kGuardElements * element_size; }
  unsigned char* at(int64_t i) { return data() + i * element_size; }
  const unsigned char* at(int64_t i) const { return bytes.data() + (kGuardElements + i) * element_size; }

  // A random finite value of the type, of magnitude below 1 (below 1/2 for
  // the narrow types, so that sums of up to kExecuteBudget products stay
  // finite in f16), built from its bits where the type has no C++ type.
  void set_random(int64_t i, uint64_t bits) {
    unsigned char* p = at(i);
    const double unit = static_cast<double>(static_cast<int64_t>(bits >> 11) % 2001 - 1000) / 1000.0;
    const double other = static_cast<double>(static_cast<int64_t>((bits >> 3) & 0xFFFF) % 2001 - 1000) / 1000.0;
    switch (dtype) {
      case WEAVE_FLOAT32: { const float f = static_cast<float>(unit); std::memcpy(p, &f, 4); break; }
      case WEAVE_FLOAT64: std::memcpy(p, &unit, 8); break;
      case WEAVE_COMPLEX64: {
        const float f[2] = {static_cast<float>(unit), static_cast<float>(other)};
        std::memcpy(p, f, 8);
        break;
      }
      case WEAVE_COMPLEX128: { const double d[2] = {unit, other}; std::memcpy(p, d, 16); break; }
      case WEAVE_FLOAT16: {  // sign, exponent 0-13 (< 1/2), mantissa
        const uint16_t h = static_cast<uint16_t>(((bits >> 20) & 0x8000) | (((bits >> 8) % 14) << 10) | (bits & 0x3FF));
        std::memcpy(p, &h, 2);
        break;
      }
      case WEAVE_BFLOAT16: {  // sign, exponent 0-125 (< 1/2), mantissa
        const uint16_t h = static_cast<uint16_t>(((bits >> 20) & 0x8000) | (((bits >> 8) % 126) << 7) | (bits & 0x7F));
        std::memcpy(p, &h, 2);
        break;
      }
      case WEAVE_FLOAT8_E4M3: p[0] = static_cast<unsigned char>(bits & 0xAF); break;  // exponent <= 0101: < 1/2
      case WEAVE_FLOAT8_E5M2: p[0] = static_cast<unsigned char>(bits & 0xBB); break;  // exponent <= 01110: < 1/2
      default: std::memset(p, 0, static_cast<size_t>(element_size));
    }
  }
  bool finite(int64_t i) const {
    const unsigned char* p = at(i);
    switch (dtype) {
      case WEAVE_FLOAT32: case WEAVE_COMPLEX64: return parts_finite<float>(p);
      case WEAVE_FLOAT64: case WEAVE_COMPLEX128: return parts_finite<double>(p);
      case WEAVE_FLOAT16: { uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7C00) != 0x7C00; }
      case WEAVE_BFLOAT16: { uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7F80) != 0x7F80; }
    }
    return true;
  }
  // Every real part of an element (one, or two for complex) is finite.
  template <class Real>
  bool parts_finite(const unsigned char* p) const {
    for (int part = 0; part < element_size / static_cast<int>(sizeof(Real)); ++part) {
      Real x;
      std::memcpy(&x, p + sizeof(Real) * static_cast<size_t>(part), sizeof x);
      if (!std::isfinite(x)) return false;
    }
    return true;
  }
  bool same_element(const Guarded& other, int64_t i) const {
    return std::memcmp(at(i), other.at(i), static_cast<size_t>(element_size)) == 0;
  }
  bool guards_intact() const {
    const size_t guard = static_cast<size_t>(kGuardElements * element_size);
    for (size_t i = 0; i < guard; ++i)
      if (bytes[i] != kGuardByte || bytes[bytes.size() - 1 - i] != kGuardByte) return false;
    return true;
  }
};

// Whether element `at` of a buffer is inside the rows x cols block.
bool in_block(int64_t at, int64_t rows, int64_t cols, int64_t ld, bool column_major) {
  const int64_t minor = at % ld, major = at / ld;
  return column_major ? (minor < rows && major < cols) : (minor < cols && major < rows);
}

// Returns whether the plan was executed.
bool execute_and_check(FuzzInput& in, weave_plan_t plan, const weave_plan_info_t& info, const PlanCase& p,
                       const std::vector<Matrix>& matrices) {
  if (load(info.backend) != WEAVE_BACKEND_HOST) return false;
  const Matrix* operand[4] = {&matrices[static_cast<size_t>(p.a)], &matrices[static_cast<size_t>(p.b)],
                              &matrices[static_cast<size_t>(p.c)],
                              p.bias >= 0 ? &matrices[static_cast<size_t>(p.bias)] : nullptr};
  // The gathered A (AG-GEMM, on request): stored like A, M x K for op N,
  // in the type A's rows travel as.
  const bool gathered = (p.desc.flags & WEAVE_FLAG_GATHERED_OUTPUT) != 0;
  const Matrix& a = *operand[0];
  const bool op_n = load(p.desc.op_a) == WEAVE_OP_N;
  const int64_t m = operand[2]->local_rows, k = op_n ? a.local_cols : a.local_rows;
  const int64_t g_rows = op_n ? m : k, g_cols = op_n ? k : m;
  const bool a_column_major = load(a.desc.order) == WEAVE_ORDER_COLUMN_MAJOR;
  const int64_t g_tight = std::max<int64_t>(1, a_column_major ? g_rows : g_cols);
  static const int64_t ld_extra[] = {0, 0, 3, -1, int64_t{1} << 62};
  const int64_t extra = in.pick(ld_extra);
  const int64_t g_ld = extra == 0 ? 0 : extra == -1 ? g_tight - 1 : g_tight + extra;
  // Its extent with the ld execute is given (a huge one is refused there,
  // so the buffer is sized for the tight one).
  int64_t g_elements = 0;
  bool small = true;
  if (gathered && g_rows > 0 && g_cols > 0) {
    const int64_t used_ld = g_ld > 0 && g_ld < kInt64Max / 2 ? g_ld : g_tight;
    small = !__builtin_mul_overflow(used_ld, (a_column_major ? g_cols : g_rows) - 1, &g_elements) &&
            !__builtin_add_overflow(g_elements, a_column_major ? g_rows : g_cols, &g_elements);
  }
  // The scales of FP8 operands (float32; E8M0 bytes for MXFP8), as many as
  // the plan says this rank's blocks have.
  const bool a_scaled = load(info.a_scale_mode) != WEAVE_SCALE_NONE;
  const bool b_scaled = load(info.b_scale_mode) != WEAVE_SCALE_NONE;
  const bool gathered_scaled = gathered && info.gathered_a_scale_elements > 0;
  int64_t total = g_elements;
  for (int64_t scales : {a_scaled ? info.a_scale_elements : 0, b_scaled ? info.b_scale_elements : 0,
                         gathered_scaled ? info.gathered_a_scale_elements : 0})
    if (scales < 0 || __builtin_add_overflow(total, scales, &total)) small = false;
  for (const Matrix* x : operand)
    if (x && __builtin_add_overflow(total, x->elements, &total)) small = false;
  // Every rank of the plan's group must take part: execute only where every
  // rank's buffers are small.
  if (!all_ranks(small && total <= kExecuteBudget)) return false;

  const int wire = wire_type_of(info, a);
  auto scale_type = [](int mode) { return mode == WEAVE_SCALE_MXFP8 ? 0 : WEAVE_FLOAT32; };
  // A, B, C, bias, gathered A, A's scales, B's scales, the gathered scales.
  std::vector<Guarded> buffers;
  for (const Matrix* x : operand)
    buffers.emplace_back(x ? x->elements : 0, x ? load(x->desc.dtype) : WEAVE_FLOAT64);
  buffers.emplace_back(g_elements, wire);
  buffers.emplace_back(a_scaled ? info.a_scale_elements : 0, scale_type(load(info.a_scale_mode)));
  buffers.emplace_back(b_scaled ? info.b_scale_elements : 0, scale_type(load(info.b_scale_mode)));
  buffers.emplace_back(gathered_scaled ? info.gathered_a_scale_elements : 0,
                       scale_type(load(info.wire_type) == WEAVE_FLOAT8_E4M3 ? WEAVE_SCALE_ROW_WISE
                                                                            : load(info.a_scale_mode)));
  uint64_t state = 0x9E3779B97F4A7C15ull ^ in.u64();
  auto next_bits = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state;
  };
  for (int b = 0; b < 4; ++b)
    for (int64_t i = 0; i < buffers[static_cast<size_t>(b)].elements; ++i)
      buffers[static_cast<size_t>(b)].set_random(i, next_bits());
  // Scales: powers of two from 1/4 to 1 (E8M0 bytes 125 to 127).
  for (int b = 5; b < 7; ++b) {
    Guarded& scales = buffers[static_cast<size_t>(b)];
    for (int64_t i = 0; i < scales.elements; ++i) {
      const int exponent = static_cast<int>(next_bits() >> 40) % 3;
      if (scales.dtype == WEAVE_FLOAT32) {
        const float f = std::ldexp(1.0f, -exponent);
        std::memcpy(scales.at(i), &f, 4);
      } else {
        scales.at(i)[0] = static_cast<unsigned char>(127 - exponent);
      }
    }
  }
  const std::vector<Guarded> before = buffers;

  static const double scalars[] = {1.0, 0.0, -1.0, 0.5, 2.0};
  weave_execute_args_t args = new_struct<weave_execute_args_t>();
  args.alpha = in.pick(scalars);
  args.beta = in.pick(scalars);
  const bool complex_plan = is_complex(load(operand[2]->desc.dtype));
  if (complex_plan) {
    args.alpha_imag = in.pick(scalars);
    args.beta_imag = in.pick(scalars);
  }
  // An empty block may come as NULL.
  const bool null_when_empty = in.flag();
  auto pointer = [&](int b) -> unsigned char* {
    Guarded& g = buffers[static_cast<size_t>(b)];
    return g.elements == 0 && null_when_empty ? nullptr : g.data();
  };
  args.a = pointer(0);
  args.b = pointer(1);
  args.c = pointer(2);
  args.bias = operand[3] ? pointer(3) : nullptr;
  if (gathered) {
    args.gathered_a = pointer(4);
    args.ld_gathered_a = g_ld;
  }
  if (a_scaled) args.a_scale = pointer(5);
  if (b_scaled) args.b_scale = pointer(6);
  if (gathered_scaled) args.gathered_a_scale = pointer(7);
  // Now and then one argument the plan must refuse: an imaginary part of
  // alpha for a real plan, a scale for an unscaled operand, or no scale
  // for a scaled one (a rank whose block is empty may pass none).
  const uint8_t misuse = in.byte();
  static float stray_scale = 1.0f;
  bool refused = false;
  if (misuse >= 248) {
    switch (misuse % 3) {
      case 0: if (!complex_plan) { args.alpha_imag = 0.5; refused = true; } break;
      case 1: if (!a_scaled) { args.a_scale = &stray_scale; refused = true; } break;
      case 2: if (b_scaled && info.b_scale_elements > 0) { args.b_scale = nullptr; refused = true; } break;
    }
  }
  const weave_status_t executed = weave_execute_ex(plan, &args);
  check_status(executed, "weave_execute_ex");
  if (refused && executed == WEAVE_SUCCESS)
    violated("weave_execute_ex accepted a wrong argument (misuse " + std::to_string(misuse % 3) +
             ": alpha_imag for a real plan, a scale for an unscaled A, no scale for a scaled B)");
  // An execute on one rank that fails (an argument, not a peer) has
  // written nothing.
  if (executed != WEAVE_SUCCESS && g_size == 1)
    for (int b : {2, 4, 7})
      if (buffers[static_cast<size_t>(b)].bytes != before[static_cast<size_t>(b)].bytes)
        violated("a failed weave_execute_ex (" + std::string(weave_last_error()) + ") wrote into output buffer " +
                 std::to_string(b) + " (C, gathered A, gathered scales)");

  for (size_t b = 0; b < buffers.size(); ++b)
    if (!buffers[b].guards_intact())
      violated("execute wrote outside buffer " + std::to_string(b) +
               " (A, B, C, bias, gathered A, A's scales, B's scales, gathered scales)");
  for (int b : {0, 1, 3, 5, 6})
    if (buffers[static_cast<size_t>(b)].bytes != before[static_cast<size_t>(b)].bytes)
      violated("execute changed input buffer " + std::to_string(b) + " (A, B, C, bias, gathered A, A's scales, B's scales)");
  const Matrix& c = *operand[2];
  const bool c_column_major = load(c.desc.order) == WEAVE_ORDER_COLUMN_MAJOR;
  for (int64_t i = 0; i < c.elements; ++i) {
    if (!in_block(i, c.local_rows, c.local_cols, c.ld, c_column_major)) {
      if (!buffers[2].same_element(before[2], i))
        violated("execute wrote into a gap of C's leading dimension at element " + std::to_string(i));
    } else if (!buffers[2].finite(i)) {
      violated("C holds a non-finite value at element " + std::to_string(i) + " after execute");
    }
  }
  if (p.desc.flags & WEAVE_FLAG_TRACE)
    check_status(weave_plan_write_trace(plan, "/dev/null"), "weave_plan_write_trace");
  return true;
}

}  // namespace

CaseOutcome run_case(const uint8_t* data, std::size_t size) {
  CaseOutcome outcome;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  FuzzInput in(data, size);
  ScopedVariable variable(in);

  // The grid: the world's size as P x 1, 1 x P or 2 x P/2, or a shape that
  // does not fit it.
  const int shapes[][2] = {{g_size, 1},  {1, g_size},     {2, g_size / 2},   {g_size, 1}, {0, g_size},
                           {g_size, -1}, {g_size + 1, 1}, {INT_MAX, INT_MAX}, {-g_size, -1}};
  const uint8_t shape = in.byte() % (sizeof shapes / sizeof shapes[0]);
  const int prows = shapes[shape][0], pcols = shapes[shape][1];
  weave_grid_t grid = nullptr;
  check_collective_status(weave_grid_create(MPI_COMM_WORLD, prows, pcols, &grid), "weave_grid_create");
  if (!grid) return outcome;
  outcome.grid = true;

  std::vector<Matrix> matrices(static_cast<size_t>(1 + in.byte() % 4));
  for (size_t i = 0; i < matrices.size(); ++i) {
    Matrix& m = matrices[i];
    decode_matrix(in, grid, prows, pcols, m);
    const weave_status_t status = weave_matrix_create(grid, &m.desc, &m.handle);
    check_collective_status(status, "weave_matrix_create");
    if (status != WEAVE_SUCCESS && m.handle) violated("a failed weave_matrix_create left a handle");
    if (!m.handle) continue;
    query_and_check_matrix(m, static_cast<int>(i));
    ++outcome.matrices;
  }

  const PlanCase p = decode_plan(in, matrices);
  weave_plan_t plan = nullptr;
  const weave_status_t status = weave_plan_create(grid, &p.desc, &plan);
  check_collective_status(status, "weave_plan_create");
  if (status != WEAVE_SUCCESS && plan) violated("a failed weave_plan_create left a handle");
  if (plan) {
    outcome.plan = true;
    const weave_plan_info_t info = check_plan(plan, p, matrices);
    outcome.executed = execute_and_check(in, plan, info, p, matrices);
  }
  check_status(weave_plan_destroy(plan), "weave_plan_destroy");
  for (Matrix& m : matrices) check_status(weave_matrix_destroy(m.handle), "weave_matrix_destroy");
  check_status(weave_grid_destroy(grid), "weave_grid_destroy");
  return outcome;
}

}  // namespace weave_fuzz
