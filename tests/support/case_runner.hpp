// Runs one distributed-multiplication case through the public C API on every
// rank and checks it against the double-precision oracle: fresh random data,
// C poisoned with NaN where it is not an input, sentinels in every gap of a
// padded leading dimension and in guard elements before and after every
// buffer that must survive every execute, inputs (A, B, bias) left exactly
// as they were. Cases run on host memory, or on
// device memory through a DeviceMemory that a GPU test program installs (the
// runner itself needs no CUDA). Shared by the MPI and GPU test programs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "support/oracle.hpp"
#include "weave/weave.h"

namespace weave_test {

extern int g_rank, g_size;

// Exit code of a test program that cannot run here (ctest SKIP_RETURN_CODE).
constexpr int kSkipExitCode = 77;

enum class GridKind { Column1D, Row1D, Rows2D, Columns2D, Block2D };
const char* grid_kind_name(GridKind g);

// WEAVE_GEMM: how one matrix lies over the grid. Block-cyclic with mb x nb
// blocks from grid (rsrc, csrc) (-1: every grid row or column holds all of
// that dimension), starting at (row_start, col_start) of its local arrays
// (a submatrix, as pdgemm's IA, JA); one balanced block per grid row and
// column (BLOCK_2D); or replicated.
struct GridLayoutSpec {
  enum class Kind { Cyclic, Block2D, Replicated };
  Kind kind = Kind::Cyclic;
  int64_t mb = 1, nb = 1;
  int rsrc = 0, csrc = 0;
  int64_t row_start = 0, col_start = 0;
  std::string name() const;
};

struct Case {
  weave_operation_t operation = WEAVE_AG_GEMM;
  weave_dtype_t dtype = WEAVE_FLOAT64;  // C's and the bias's, and A's and B's unless given below
  // A and B of a type of their own (0: dtype), e.g. FP8 with a scale mode.
  weave_dtype_t a_type = weave_dtype_t{}, b_type = weave_dtype_t{};
  weave_scale_mode_t a_scale = WEAVE_SCALE_NONE, b_scale = WEAVE_SCALE_NONE;
  // AG-GEMM's wire type (0: none): A, stored in a_type, is quantized into it.
  weave_dtype_t wire_type = weave_dtype_t{};
  // Print the relative Frobenius error of C against the product of the
  // unquantized A (a wire-type case with beta 0 and no bias).
  bool report_wire_error = false;
  // Every count of M, N and K a multiple of this (the shard pattern applied
  // to size / count_unit): FP8 on GPUs needs 16-byte shards.
  int64_t count_unit = 1;
  weave_memory_t memory = WEAVE_MEMORY_HOST;
  weave_op_t op_a = WEAVE_OP_N, op_b = WEAVE_OP_N;
  weave_order_t order_a = WEAVE_ORDER_COLUMN_MAJOR, order_b = WEAVE_ORDER_COLUMN_MAJOR,
                order_c = WEAVE_ORDER_COLUMN_MAJOR;
  Shards shards = Shards::Balanced;
  bool bias = false;
  // The bias is a 1 x N matrix: column-major, consecutive entries are its ld
  // apart (ld = 1 + bias_ld_padding); row-major, they are adjacent and the
  // padding follows the row.
  weave_order_t order_bias = WEAVE_ORDER_COLUMN_MAJOR;
  int bias_ld_padding = 0;
  double alpha = 1.0, beta = 0.0;
  double alpha_imag = 0.0, beta_imag = 0.0;  // complex types only
  bool padded = false;  // leading dimensions of A, B and C larger than tight
  int chunks = 0;
  weave_direction_t direction = WEAVE_DIRECTION_AUTO;
  weave_algorithm_t algorithm = WEAVE_ALGORITHM_AUTO;
  weave_progress_t progress = WEAVE_PROGRESS_AUTO;
  GridKind grid = GridKind::Column1D;
  int64_t m = 0, n = 0, k = 0;
  bool gathered = false;
  bool allow_tf32 = false;  // WEAVE_FLAG_ALLOW_TF32 (float32 on GPUs), with its looser tolerance
  bool reduce_in_accumulation_type = false;  // WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE
  int repeats = 1;
  bool fresh_inputs = false;  // every repeat multiplies new random A, B, C and bias, in the same buffers
  // WEAVE_GEMM: a grid_rows x (ranks / grid_rows) grid, the layouts of A
  // and B (as stored), C and bias, and WEAVE_PANEL_WIDTH (0: the default).
  int grid_rows = 1;
  GridLayoutSpec layout_a, layout_b, layout_c, layout_bias;
  int64_t panel_width = 0;
  // WEAVE_GEMM_BANDS (-1: unset, the planner's choice; 0: SUMMA's panels;
  // n: the travelling operand in n bands of C).
  int gemm_bands = -1;
  // Text the plan's describe must contain on every rank (1-D operations;
  // empty: not checked), e.g. which kernel multiplies.
  std::string expect_in_describe;

  std::string name() const;
};

// How the runner reaches device memory; GPU test programs install one. Its
// functions throw std::exception on failure.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  // Called once after MPI_Init: pick this rank's device. False, with the
  // reason, when this rank cannot run device cases (the program then
  // reports itself skipped).
  virtual bool attach(std::string* why_not) = 0;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  virtual void upload(void* device, const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, const void* device, std::size_t bytes) = 0;
  // One execute of `plan` on uploaded device buffers; returns once its
  // results can be downloaded.
  virtual weave_status_t execute(weave_plan_t plan, const weave_execute_args_t& args) = 0;
  // `plan` is about to be destroyed: drop anything made for it.
  virtual void plan_finished(weave_plan_t plan) { (void)plan; }
};

// Installs the device memory that cases with memory == WEAVE_MEMORY_DEVICE use.
void set_device_memory(DeviceMemory* memory);

// Runs one case on every rank (collective over MPI_COMM_WORLD); returns
// whether this rank saw it pass. Prints what went wrong to stderr.
bool run_case(const Case& c, uint64_t seed);

// What a case-list program was asked for on its command line:
//   --quick               fewer cases
//   --seed S              replay a run
//   --memory host|device  where the matrices live (default host)
//   --types LIST          element types: a comma-separated list of f64, f32,
//                         f16, bf16, c128, c64, or "all" (the four real
//                         types; default f64,f32)
struct CaseListOptions {
  bool quick = false;
  weave_memory_t memory = WEAVE_MEMORY_HOST;
  std::vector<weave_dtype_t> types{WEAVE_FLOAT64, WEAVE_FLOAT32};
};

using CaseGenerator = std::function<std::vector<Case>(const CaseListOptions& options, std::mt19937_64& rng)>;

// main() of a case-list test program: MPI_Init, a fresh seed (or --seed S)
// broadcast from rank 0, the device attached for --memory device (exit code
// kSkipExitCode when there is none), every case run and agreed on, a summary
// line, and exit code 1 if any case failed. make_cases gets the options and
// a generator seeded identically on every rank; every case it returns runs
// in the --memory asked for.
int run_case_list(int argc, char** argv, const CaseGenerator& make_cases);

}  // namespace weave_test
