#include "support/case_runner.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "support/element_types.hpp"

namespace weave_test {

int g_rank = 0, g_size = 1;

const char* grid_kind_name(GridKind g) {
  switch (g) {
    case GridKind::Column1D: return "Px1";
    case GridKind::Row1D: return "1xP";
    case GridKind::Rows2D: return "2D-rows";
    case GridKind::Columns2D: return "2D-columns";
    case GridKind::Block2D: return "2D-block";
  }
  return "?";
}

std::string GridLayoutSpec::name() const {
  char text[96];
  switch (kind) {
    case Kind::Block2D: return "2d";
    case Kind::Replicated: return "replicated";
    case Kind::Cyclic:
      std::snprintf(text, sizeof text, "%lldx%lld@%d,%d", static_cast<long long>(mb), static_cast<long long>(nb), rsrc,
                    csrc);
      if (row_start || col_start)
        std::snprintf(text + std::strlen(text), sizeof text - std::strlen(text), "+%lld,%lld",
                      static_cast<long long>(row_start), static_cast<long long>(col_start));
      return text;
  }
  return "?";
}

namespace {
// The case without its complex scalars' imaginary parts.
std::string case_text(const Case& c) {
  static const char* ops[] = {"", "AG-GEMM", "GEMM-RS", "GEMM-AR"};
  static const char* algs[] = {"auto", "ring", "seq", "direct", "pipelined", "hierarchical"};
  static const char* dirs[] = {"auto", "fwd", "bwd", "bidir"};
  // bias=0, or bias=<order>+<ld padding>: C+1 is column-major with ld 2.
  char bias_text[32] = "0";
  if (c.bias) std::snprintf(bias_text, sizeof bias_text, "%c+%d", c.order_bias ? 'R' : 'C', c.bias_ld_padding);
  if (c.operation == WEAVE_GEMM) {
    char text[400];
    std::snprintf(text, sizeof text,
                  "GEMM %s op=%c%c %dx%d M=%lld N=%lld K=%lld A=%s B=%s C=%s bias=%s beta=%g alpha=%g pad=%d "
                  "order=%c%c%c alg=%s progress=%s width=%lld bands=%d repeats=%d%s",
                  dtype_short_name(c.dtype), "NTC"[c.op_a], "NTC"[c.op_b], c.grid_rows, g_size / c.grid_rows,
                  static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k),
                  c.layout_a.name().c_str(), c.layout_b.name().c_str(), c.layout_c.name().c_str(),
                  c.bias ? c.layout_bias.name().c_str() : "0", c.beta, c.alpha, c.padded ? 1 : 0, c.order_a ? 'R' : 'C',
                  c.order_b ? 'R' : 'C', c.order_c ? 'R' : 'C',
                  c.algorithm == WEAVE_ALGORITHM_SUMMA        ? "summa"
                  : c.algorithm == WEAVE_ALGORITHM_SEQUENTIAL ? "seq"
                                                            : "auto",
                  c.progress == WEAVE_PROGRESS_THREAD ? "thread" : c.progress == WEAVE_PROGRESS_TILES ? "tiles" : "auto",
                  static_cast<long long>(c.panel_width), c.gemm_bands, c.repeats, c.memory == WEAVE_MEMORY_DEVICE ? " memory=device" : "");
    return text;
  }
  // A and B of their own types: " A=e4m3/2 B=e5m2/1" (type/scale mode).
  char types_text[80] = "";
  if (c.a_type || c.b_type)
    std::snprintf(types_text, sizeof types_text, " A=%s/%d B=%s/%d%s%s", dtype_short_name(c.a_type ? c.a_type : c.dtype),
                  static_cast<int>(c.a_scale), dtype_short_name(c.b_type ? c.b_type : c.dtype),
                  static_cast<int>(c.b_scale), c.wire_type ? " wire=" : "",
                  c.wire_type ? dtype_short_name(c.wire_type) : "");
  char text[480];
  std::snprintf(text, sizeof text,
                "%s %s%s op=%c%c order=%c%c%c %s M=%lld N=%lld K=%lld bias=%s beta=%g alpha=%g pad=%d chunks=%d "
                "dir=%s alg=%s progress=%s grid=%s gathered=%d repeats=%d%s%s%s%s",
                ops[c.operation], dtype_short_name(c.dtype), types_text, "NTC"[c.op_a], "NTC"[c.op_b],
                c.order_a ? 'R' : 'C', c.order_b ? 'R' : 'C', c.order_c ? 'R' : 'C', shards_name(c.shards),
                static_cast<long long>(c.m), static_cast<long long>(c.n), static_cast<long long>(c.k), bias_text, c.beta,
                c.alpha, c.padded ? 1 : 0, c.chunks, dirs[c.direction], algs[c.algorithm],
                c.progress == WEAVE_PROGRESS_THREAD ? "thread" : c.progress == WEAVE_PROGRESS_TILES ? "tiles" : "auto",
                grid_kind_name(c.grid), c.gathered ? 1 : 0, c.repeats, c.fresh_inputs ? " fresh-inputs" : "",
                c.allow_tf32 ? " tf32" : "", c.memory == WEAVE_MEMORY_DEVICE ? " memory=device" : "",
                c.reduce_in_accumulation_type ? " reduce-in-accumulation-type" : "");
  return text;
}
}  // namespace

std::string Case::name() const {
  std::string text = case_text(*this);
  if (alpha_imag != 0.0 || beta_imag != 0.0)
    text += " alpha_imag=" + std::to_string(alpha_imag) + " beta_imag=" + std::to_string(beta_imag);
  return text;
}

namespace {

DeviceMemory* g_device_memory = nullptr;

#define CHECK_WEAVE(call)                                                                                      \
  do {                                                                                                         \
    weave_status_t status_ = (call);                                                                           \
    if (status_ != WEAVE_SUCCESS) {                                                                            \
      std::fprintf(stderr, "rank %d: %s failed: %s: %s\n", g_rank, #call, weave_status_string(status_),       \
                   weave_last_error());                                                                        \
      return false;                                                                                            \
    }                                                                                                          \
  } while (0)

// ---------------------------------------------------------------------------
// Grids: one per kind, created once.

struct GridInfo {
  weave_grid_t grid = nullptr;
  int prows = 1, pcols = 1;
  weave_group_t group = WEAVE_GROUP_GRID;
};

// Created on first use, destroyed before MPI_Finalize (with them the
// transports' per-grid state, e.g. NCCL communicators).
std::map<GridKind, GridInfo> g_grids;
// WEAVE_GEMM's grids over all ranks, by their number of rows.
std::map<int, GridInfo> g_full_grids;

void destroy_grids() {
  for (auto& [kind, info] : g_grids) weave_grid_destroy(info.grid);
  g_grids.clear();
  for (auto& [rows, info] : g_full_grids) weave_grid_destroy(info.grid);
  g_full_grids.clear();
}

bool make_full_grid(int prows, GridInfo* out) {
  auto found = g_full_grids.find(prows);
  if (found != g_full_grids.end()) {
    *out = found->second;
    return true;
  }
  GridInfo info;
  info.prows = prows;
  info.pcols = g_size / prows;
  CHECK_WEAVE(weave_grid_create(MPI_COMM_WORLD, info.prows, info.pcols, &info.grid));
  g_full_grids[prows] = info;
  *out = info;
  return true;
}

bool make_grid(GridKind kind, GridInfo* out) {
  auto found = g_grids.find(kind);
  if (found != g_grids.end()) {
    *out = found->second;
    return true;
  }
  GridInfo info;
  switch (kind) {
    case GridKind::Column1D: info.prows = g_size; info.pcols = 1; info.group = WEAVE_GROUP_GRID; break;
    case GridKind::Row1D: info.prows = 1; info.pcols = g_size; info.group = WEAVE_GROUP_GRID; break;
    case GridKind::Rows2D:
    case GridKind::Block2D:
      info.prows = g_size % 2 == 0 ? 2 : 1;
      info.pcols = g_size / info.prows;
      info.group = WEAVE_GROUP_ROW;
      break;
    case GridKind::Columns2D:
      info.pcols = g_size % 2 == 0 ? 2 : 1;
      info.prows = g_size / info.pcols;
      info.group = WEAVE_GROUP_COLUMN;
      break;
  }
  CHECK_WEAVE(weave_grid_create(MPI_COMM_WORLD, info.prows, info.pcols, &info.grid));
  g_grids[kind] = info;
  *out = info;
  return true;
}

// ---------------------------------------------------------------------------
// Local storage of one rank's block: a host image in the element type of
// kGuard guard elements, the block's storage from its first to its last
// element (what weave_matrix_local_elements asks for, gaps of a padded ld
// included), and kGuard guard elements more; for device cases a device copy
// of the whole image, uploaded and downloaded whole. Guards and gaps hold a
// sentinel that no execute may change.

struct LocalMatrix {
  const char* name = "";
  weave_dtype_t dtype = WEAVE_FLOAT64;
  weave_order_t order = WEAVE_ORDER_COLUMN_MAJOR;
  int64_t rows = 0, cols = 0, ld = 1;
  std::vector<unsigned char> image;
  void* device = nullptr;  // device cases only
  static constexpr double kSentinel = 12345.0;
  static constexpr int64_t kGuard = 16;

  LocalMatrix() = default;
  LocalMatrix(const LocalMatrix&) = delete;
  LocalMatrix& operator=(const LocalMatrix&) = delete;
  ~LocalMatrix() {
    if (device) g_device_memory->release(device);
  }

  // Position of element (i, j) in the image.
  int64_t index(int64_t i, int64_t j) const {
    return kGuard + (order == WEAVE_ORDER_COLUMN_MAJOR ? i + j * ld : i * ld + j);
  }
  bool empty() const { return rows == 0 || cols == 0; }
  // Elements from the block's first to its last.
  int64_t storage() const {
    if (empty()) return 0;
    return order == WEAVE_ORDER_COLUMN_MAJOR ? ld * (cols - 1) + rows : ld * (rows - 1) + cols;
  }
  int64_t image_elements() const { return kGuard + storage() + kGuard; }
  std::size_t bytes() const { return static_cast<std::size_t>(image_elements()) * element_size(dtype); }
  void allocate(weave_memory_t memory) {
    image.assign(bytes(), 0);
    for (int64_t p = 0; p < image_elements(); ++p) store_element(image.data(), p, dtype, kSentinel);
    if (memory == WEAVE_MEMORY_DEVICE) device = g_device_memory->allocate(bytes());
  }
  // Elements as complex numbers (real types: the real part, imaginary 0).
  void set(int64_t i, int64_t j, std::complex<double> x) { store_value(image.data(), index(i, j), dtype, x); }
  std::complex<double> get(int64_t i, int64_t j) const { return load_value(image.data(), index(i, j), dtype); }
  // The block's first element, where Weave gets it.
  void* data() {
    if (empty()) return nullptr;  // empty blocks are passed as NULL
    unsigned char* base = device ? static_cast<unsigned char*>(device) : image.data();
    return base + kGuard * static_cast<int64_t>(element_size(dtype));
  }
  void upload() {
    if (device) g_device_memory->upload(device, image.data(), bytes());
  }
  void download() {
    if (device) g_device_memory->download(image.data(), device, bytes());
  }
  // Whether every element outside the rows x cols block (guards and ld
  // gaps) still holds the sentinel; reports the first one that does not.
  bool outside_intact() const {
    if (image.empty()) return true;  // not allocated: not part of this case
    const std::complex<double> sentinel = round_to(dtype, std::complex<double>(kSentinel));
    for (int64_t p = 0; p < image_elements(); ++p) {
      const int64_t s = p - kGuard;  // position in the storage
      if (s >= 0 && s < storage()) {
        const int64_t minor = s % ld, major = s / ld;
        const bool inside = order == WEAVE_ORDER_COLUMN_MAJOR ? (minor < rows && major < cols)
                                                              : (minor < cols && major < rows);
        if (inside) continue;
      }
      const std::complex<double> found = load_value(image.data(), p, dtype);
      if (found != sentinel) {
        std::fprintf(stderr, "rank %d: %s: %s element %lld of its storage holds (%.17g, %.17g), not the sentinel\n",
                     g_rank, name, s < 0 || s >= storage() ? "guard" : "ld-gap", static_cast<long long>(s),
                     found.real(), found.imag());
        return false;
      }
    }
    return true;
  }
};

// One operand: its global (group-level or grid-level) matrix, descriptor and local block.
struct Operand {
  ComplexDense global;  // the stored matrix (not op(X)); real types: imaginary parts 0
  weave_matrix_t desc = nullptr;
  LocalMatrix local;
  int64_t row_offset = 0, col_offset = 0;
  ~Operand() { weave_matrix_destroy(desc); }
};

// Creates the descriptor of a rows x cols matrix and this rank's storage,
// with a leading dimension `ld_padding` elements larger than tight.
// Creates the matrix `d` describes and this rank's storage, with a leading
// dimension `ld_padding` elements larger than tight.
bool create_operand(const char* name, const GridInfo& g, weave_matrix_desc_t d, int64_t ld_padding, Operand* out) {
  // First ask for the tight block, then (padded) recreate with a larger ld.
  CHECK_WEAVE(weave_matrix_create(g.grid, &d, &out->desc));
  int64_t lr = 0, lc = 0, ld = 0;
  CHECK_WEAVE(weave_matrix_local_shape(out->desc, &lr, &lc));
  CHECK_WEAVE(weave_matrix_ld(out->desc, &ld));
  if (ld_padding > 0) {
    weave_matrix_destroy(out->desc);
    d.ld = ld + ld_padding;
    CHECK_WEAVE(weave_matrix_create(g.grid, &d, &out->desc));
    CHECK_WEAVE(weave_matrix_ld(out->desc, &ld));
  }
  CHECK_WEAVE(weave_matrix_local_offset(out->desc, &out->row_offset, &out->col_offset));
  out->local.name = name;
  out->local.dtype = d.dtype;
  out->local.order = d.order;
  out->local.rows = lr;
  out->local.cols = lc;
  out->local.ld = ld;
  // The storage between the guards is what Weave says to allocate.
  int64_t elements = 0;
  CHECK_WEAVE(weave_matrix_local_elements(out->desc, &elements));
  if (elements != out->local.storage()) {
    std::fprintf(stderr, "rank %d: %s: weave_matrix_local_elements = %lld for a %lld x %lld block with ld %lld\n",
                 g_rank, name, static_cast<long long>(elements), static_cast<long long>(lr),
                 static_cast<long long>(lc), static_cast<long long>(ld));
    return false;
  }
  out->local.allocate(d.memory);
  return true;
}

// The descriptor of a rows x cols matrix of a 1-D case.
bool describe_operand(const char* name, const GridInfo& g, int64_t rows, int64_t cols, weave_distribution_t dist,
                      const std::vector<int64_t>& row_counts, const std::vector<int64_t>& col_counts,
                      weave_dtype_t dtype, weave_order_t order, int64_t ld_padding, weave_memory_t memory,
                      Operand* out, weave_scale_mode_t scale_mode = WEAVE_SCALE_NONE) {
  weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
  d.rows = rows;
  d.cols = cols;
  d.dtype = dtype;
  d.scale_mode = scale_mode;
  d.distribution = dist;
  d.group = g.group;
  d.row_counts = row_counts.empty() ? nullptr : row_counts.data();
  d.col_counts = col_counts.empty() ? nullptr : col_counts.data();
  d.order = order;
  d.memory = memory;
  return create_operand(name, g, d, ld_padding, out);
}

// Sets the operand's global matrix and copies this rank's block out of it.
void fill_operand(const ComplexDense& global, Operand* x) {
  x->global = global;
  for (int64_t j = 0; j < x->local.cols; ++j)
    for (int64_t i = 0; i < x->local.rows; ++i) x->local.set(i, j, global(x->row_offset + i, x->col_offset + j));
}

// Random data as the element type holds it: 16-bit inputs are rounded, so
// the oracle multiplies exactly what the library multiplies. (float32 and
// float64 inputs stay as generated; their rounding is within the tolerance.)
ComplexDense random_inputs(int64_t rows, int64_t cols, weave_dtype_t t, std::mt19937_64& rng) {
  const Dense re = random_dense(rows, cols, rng);
  const Dense im = is_complex_type(t) ? random_dense(rows, cols, rng) : Dense(rows, cols);
  ComplexDense d(rows, cols);
  for (std::size_t x = 0; x < d.v.size(); ++x) d.v[x] = {re.v[x], im.v[x]};
  if (is_16bit(t))
    for (std::complex<double>& x : d.v) x = round_to(t, x);
  return d;
}

// op(X) of a stored matrix.
ComplexDense op_of(const ComplexDense& x, weave_op_t op) {
  return op == WEAVE_OP_N ? x : op == WEAVE_OP_T ? transpose(x) : conjugate_transpose(x);
}

// The scales of one scaled (FP8) operand, every owner's (every rank of the
// group holds them all, for the oracle): owner q's block is, in op form,
// outer[q] x inner[q]; its scales are laid out as doc/fp8.md says (the
// tests' reading, support/float8_reference.hpp). Each element of op(X)
// belongs to the rank whose counts cover its split index.
struct OperandScales {
  weave_scale_mode_t mode = WEAVE_SCALE_NONE;
  weave_dtype_t type = WEAVE_FLOAT32;  // or kScaleE8M0 (MXFP8)
  bool split_outer = true;             // the operand is split along its outer dimension (else along K)
  std::vector<int64_t> counts, offsets;
  std::vector<int64_t> outer, inner;
  std::vector<std::vector<double>> values;  // per owner, in its layout

  bool scaled() const { return mode != WEAVE_SCALE_NONE; }
  // The scale of op-form element (o, k): o along the outer dimension, k along K.
  double at(int64_t o, int64_t k) const {
    const int64_t split = split_outer ? o : k;
    int q = 0;
    while (q + 1 < static_cast<int>(counts.size()) && (counts[q] == 0 || split >= offsets[q] + counts[q])) ++q;
    const int64_t lo = split_outer ? o - offsets[q] : o, lk = split_outer ? k : k - offsets[q];
    return values[q][static_cast<std::size_t>(reference_scale_index(mode, lo, lk, outer[q], inner[q]))];
  }
};

// Random scales for every owner: powers of two times a few mantissa bits
// from 2^-3 to about 2^2 (exact in float32; products of K = 700 terms stay
// well inside float16's range), powers of two for MXFP8.
OperandScales make_scales(weave_scale_mode_t mode, bool split_outer, const std::vector<int64_t>& counts,
                          int64_t outer_total, int64_t inner_total, std::mt19937_64& rng) {
  OperandScales s;
  s.mode = mode;
  s.type = mode == WEAVE_SCALE_MXFP8 ? kScaleE8M0 : WEAVE_FLOAT32;
  s.split_outer = split_outer;
  s.counts = counts;
  std::uniform_int_distribution<int> exponent(-3, 1), mantissa(0, 15);
  int64_t offset = 0;
  for (int64_t count : counts) {
    s.offsets.push_back(offset);
    offset += count;
    s.outer.push_back(split_outer ? count : outer_total);
    s.inner.push_back(split_outer ? inner_total : count);
    std::vector<double> v(static_cast<std::size_t>(reference_scale_elements(mode, s.outer.back(), s.inner.back())));
    for (double& x : v)
      x = mode == WEAVE_SCALE_MXFP8 ? std::ldexp(1.0, exponent(rng)) : std::ldexp(1.0 + mantissa(rng) / 16.0, exponent(rng));
    s.values.push_back(std::move(v));
  }
  return s;
}

// Random FP8 values (their codes, as doubles) for an operand: uniform in
// [-4, 4) rounded to the format, so normal and subnormal values both occur.
Dense random_float8(int64_t rows, int64_t cols, weave_dtype_t t, std::mt19937_64& rng) {
  Dense d = random_dense(rows, cols, rng);
  for (double& x : d.v) x = round_to(t, 4.0 * x);
  return d;
}

// One rank's scales as a vector buffer with guards (an input: it must come
// back unchanged).
void fill_scales(const OperandScales& s, int owner, LocalMatrix* local, weave_memory_t memory) {
  const std::vector<double>& mine = s.values[static_cast<std::size_t>(owner)];
  local->dtype = s.type;
  local->rows = static_cast<int64_t>(mine.size());
  local->cols = 1;
  local->ld = std::max<int64_t>(1, local->rows);
  if (local->image.empty()) local->allocate(memory);  // fresh inputs reuse the buffer
  for (int64_t i = 0; i < local->rows; ++i) local->set(i, 0, mine[static_cast<std::size_t>(i)]);
}

// A real matrix as the oracle's complex one (imaginary parts 0).
ComplexDense as_complex(const Dense& x) {
  ComplexDense d(x.rows, x.cols);
  for (std::size_t p = 0; p < x.v.size(); ++p) d.v[p] = x.v[p];
  return d;
}

// The case's complex scalars (real types: imaginary parts 0).
std::complex<double> alpha_of(const Case& c) { return {c.alpha, c.alpha_imag}; }
std::complex<double> beta_of(const Case& c) { return {c.beta, c.beta_imag}; }

// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// What every case does with its plan and buffers.

// Tell the device memory first (it may hold a graph of the plan), then destroy.
struct PlanFinisher {
  void operator()(weave_plan_t p) const {
    if (g_device_memory) g_device_memory->plan_finished(p);
    weave_plan_destroy(p);
  }
};
using PlanGuard = std::unique_ptr<weave_plan_s, PlanFinisher>;

// One execute on the case's buffers: every buffer uploaded, the execute,
// every buffer downloaded; the inputs (A, B, bias; block, gaps and guards)
// must come back as they went, the outputs' guards and ld gaps intact.
// `gathered` may be an unallocated matrix (no gathered output).
// The scales of scaled operands are inputs too, the gathered A's scales an
// output (unallocated matrices where there are none).
struct ScaleBuffers {
  LocalMatrix a, b, gathered;
};

bool execute_on_buffers(const Case& cs, weave_plan_t plan, Operand& A, Operand& B, Operand& C, Operand& Bias,
                        LocalMatrix& gathered, ScaleBuffers& scales, int repeat) {
  LocalMatrix* const inputs[] = {&A.local, &B.local, &Bias.local, &scales.a, &scales.b};
  LocalMatrix* const outputs[] = {&C.local, &gathered, &scales.gathered};
  for (LocalMatrix* x : inputs) x->upload();
  for (LocalMatrix* x : outputs) x->upload();
  std::vector<std::vector<unsigned char>> uploaded;
  for (const LocalMatrix* x : inputs) uploaded.push_back(x->image);

  weave_execute_args_t args{};
  args.alpha = cs.alpha;
  args.beta = cs.beta;
  args.alpha_imag = cs.alpha_imag;
  args.beta_imag = cs.beta_imag;
  args.a = A.local.data();
  args.b = B.local.data();
  args.c = C.local.data();
  args.bias = cs.bias ? Bias.local.data() : nullptr;
  args.gathered_a = cs.gathered ? gathered.data() : nullptr;
  args.ld_gathered_a = gathered.ld;
  args.a_scale = scales.a.data();
  args.b_scale = scales.b.data();
  args.gathered_a_scale = scales.gathered.data();
  const bool device = cs.memory == WEAVE_MEMORY_DEVICE;
  CHECK_WEAVE(device ? g_device_memory->execute(plan, args) : weave_execute_ex(plan, &args));
  for (LocalMatrix* x : inputs) x->download();
  for (LocalMatrix* x : outputs) x->download();
  bool ok = true;
  for (std::size_t q = 0; q < uploaded.size(); ++q)
    if (inputs[q]->image != uploaded[q]) {
      std::fprintf(stderr, "rank %d: repeat %d: input %s was written\n", g_rank, repeat, inputs[q]->name);
      ok = false;
    }
  for (const LocalMatrix* x : outputs)
    if (!x->outside_intact()) ok = false;
  return ok;
}

// C(gi, gj) against the oracle; reports the first three misses.
using ComplexReference = ReferenceOf<std::complex<double>>;

bool matches_reference(std::complex<double> got, const ComplexReference& ref, int64_t gi, int64_t gj, int repeat,
                       int* reported) {
  const std::complex<double> want = ref.c(gi, gj);
  const double bound = ref.bound(gi, gj);
  if (std::abs(got - want) <= bound) return true;
  if ((*reported)++ < 3)
    std::fprintf(stderr, "rank %d: repeat %d: C(%lld,%lld) = (%.17g, %.17g), expected (%.17g, %.17g) (bound %.3g)\n",
                 g_rank, repeat, static_cast<long long>(gi), static_cast<long long>(gj), got.real(), got.imag(),
                 want.real(), want.imag(), bound);
  return false;
}

// ---------------------------------------------------------------------------
// WEAVE_GEMM: A, B, C and bias each laid out over the whole grid.

// The test's own reading of a layout along one grid dimension (ScaLAPACK's
// INDXL2G): the global index, within the matrix, of local position l of
// process p of `procs`, or -1 when the local array holds no element of the
// matrix there (before a submatrix's start, or past its end).
int64_t global_of_local(const GridLayoutSpec& s, bool along_rows, int64_t extent, int p, int procs, int64_t l) {
  switch (s.kind) {
    case GridLayoutSpec::Kind::Replicated: return l < extent ? l : -1;
    case GridLayoutSpec::Kind::Block2D: {
      const int64_t count = extent / procs + (p < extent % procs ? 1 : 0);
      const int64_t offset = p * (extent / procs) + std::min<int64_t>(p, extent % procs);
      return l < count ? offset + l : -1;
    }
    case GridLayoutSpec::Kind::Cyclic: {
      const int64_t block = along_rows ? s.mb : s.nb;
      const int source = along_rows ? s.rsrc : s.csrc;
      const int64_t start = along_rows ? s.row_start : s.col_start;
      if (source < 0) return l - start >= 0 && l - start < extent ? l - start : -1;
      const int64_t G = (l / block * procs + (procs + p - source) % procs) * block + l % block;
      const int64_t g = G - start;
      return g >= 0 && g < extent ? g : -1;
    }
  }
  return -1;
}

// A matrix of a WEAVE_GEMM case: descriptor, local array and its global data.
bool describe_grid_operand(const char* name, const GridInfo& g, int64_t rows, int64_t cols, const GridLayoutSpec& s,
                           weave_dtype_t dtype, weave_order_t order, int64_t ld_padding, weave_memory_t memory,
                           Operand* out) {
  weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
  d.rows = rows;
  d.cols = cols;
  d.dtype = dtype;
  d.order = order;
  d.memory = memory;
  switch (s.kind) {
    case GridLayoutSpec::Kind::Cyclic:
      d.distribution = WEAVE_DIST_BLOCK_CYCLIC;
      d.mb = s.mb;
      d.nb = s.nb;
      d.rsrc = s.rsrc;
      d.csrc = s.csrc;
      d.row_start = s.row_start;
      d.col_start = s.col_start;
      break;
    case GridLayoutSpec::Kind::Block2D: d.distribution = WEAVE_DIST_BLOCK_2D; break;
    case GridLayoutSpec::Kind::Replicated: d.distribution = WEAVE_DIST_REPLICATED; break;
  }
  return create_operand(name, g, d, ld_padding, out);
}

// Every position of a rank's local array with the matrix element it holds
// (global row and column), or -1, -1 for positions outside the matrix.
template <class Visit>
void for_each_local(const Operand& x, const GridLayoutSpec& s, int64_t rows, int64_t cols, const GridInfo& g,
                    int grid_row, int grid_col, Visit&& visit) {
  for (int64_t j = 0; j < x.local.cols; ++j) {
    const int64_t gj = global_of_local(s, false, cols, grid_col, g.pcols, j);
    for (int64_t i = 0; i < x.local.rows; ++i) {
      const int64_t gi = global_of_local(s, true, rows, grid_row, g.prows, i);
      if (gi < 0 || gj < 0)
        visit(i, j, int64_t{-1}, int64_t{-1});
      else
        visit(i, j, gi, gj);
    }
  }
}

bool run_gemm_case(const Case& cs, uint64_t seed) {
  const bool device = cs.memory == WEAVE_MEMORY_DEVICE;
  if (device && !g_device_memory) {
    std::fprintf(stderr, "rank %d: a device-memory case, but this program installed no device memory\n", g_rank);
    return false;
  }
  if (cs.grid_rows < 1 || g_size % cs.grid_rows != 0) {
    std::fprintf(stderr, "rank %d: %d grid rows do not divide %d ranks\n", g_rank, cs.grid_rows, g_size);
    return false;
  }
  GridInfo g;
  if (!make_full_grid(cs.grid_rows, &g)) return false;
  int grid_row = 0, grid_col = 0;
  CHECK_WEAVE(weave_grid_coords(g.grid, &grid_row, &grid_col));
  const int64_t M = cs.m, N = cs.n, K = cs.k;
  const weave_dtype_t t = cs.dtype;
  const bool at = cs.op_a != WEAVE_OP_N, bt = cs.op_b != WEAVE_OP_N;
  const int64_t a_rows = at ? K : M, a_cols = at ? M : K, b_rows = bt ? N : K, b_cols = bt ? K : N;
  const int64_t pad = cs.padded ? 3 : 0;
  Operand A, B, C, Bias;
  if (!describe_grid_operand("A", g, a_rows, a_cols, cs.layout_a, t, cs.order_a, pad, cs.memory, &A) ||
      !describe_grid_operand("B", g, b_rows, b_cols, cs.layout_b, t, cs.order_b, pad, cs.memory, &B) ||
      !describe_grid_operand("C", g, M, N, cs.layout_c, t, cs.order_c, pad, cs.memory, &C) ||
      (cs.bias && !describe_grid_operand("bias", g, 1, N, cs.layout_bias, t, cs.order_bias, cs.bias_ld_padding,
                                         cs.memory, &Bias)))
    return false;

  weave_plan_desc_t pd{};
  pd.operation = WEAVE_GEMM;
  pd.op_a = cs.op_a;
  pd.op_b = cs.op_b;
  pd.a = A.desc;
  pd.b = B.desc;
  pd.c = C.desc;
  pd.bias = cs.bias ? Bias.desc : nullptr;
  pd.algorithm = cs.algorithm;
  pd.progress = cs.progress;
  pd.timeout_ms = 120000;
  // The panel width is the plan's to read from the environment, alike on every rank.
  if (cs.panel_width > 0) setenv("WEAVE_PANEL_WIDTH", std::to_string(cs.panel_width).c_str(), 1);
  if (cs.gemm_bands >= 0) setenv("WEAVE_GEMM_BANDS", std::to_string(cs.gemm_bands).c_str(), 1);
  weave_plan_t plan = nullptr;
  const weave_status_t created = weave_plan_create(g.grid, &pd, &plan);
  if (cs.panel_width > 0) unsetenv("WEAVE_PANEL_WIDTH");
  if (cs.gemm_bands >= 0) unsetenv("WEAVE_GEMM_BANDS");
  CHECK_WEAVE(created);
  const PlanGuard plan_guard(plan);
  weave_plan_info_t info{};
  CHECK_WEAVE(weave_plan_get_info(plan, &info));
  const weave_algorithm_t expected = g_size == 1 ? WEAVE_ALGORITHM_SEQUENTIAL
                                     : cs.algorithm == WEAVE_ALGORITHM_AUTO ? WEAVE_ALGORITHM_SUMMA
                                                                            : cs.algorithm;
  if (info.algorithm != expected || info.group_size != g_size) {
    std::fprintf(stderr, "rank %d: plan runs algorithm %d over %d ranks, expected %d over %d\n", g_rank,
                 info.algorithm, info.group_size, expected, g_size);
    return false;
  }
  // WEAVE_GEMM_BANDS reaches the plan: SUMMA over several ranks says how
  // many bands of C the travelling operand takes (at most the rank's rows
  // or columns of C; none where K = 0 leaves nothing to multiply).
  if (cs.gemm_bands > 0 && g_size > 1 && info.algorithm == WEAVE_ALGORITHM_SUMMA && cs.k > 0) {
    const char* text = nullptr;
    CHECK_WEAVE(weave_plan_describe(plan, &text));
    if (!text || !std::strstr(text, " travels in ")) {
      std::fprintf(stderr, "rank %d: WEAVE_GEMM_BANDS=%d but the plan does not run in bands of C: %s\n", g_rank,
                   cs.gemm_bands, text ? text : "(no description)");
      return false;
    }
  }

  bool ok = true;
  for (int repeat = 0; repeat < cs.repeats && ok; ++repeat) {
    // Fresh data each repeat: the same global matrices on every rank.
    std::mt19937_64 rng(seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(repeat));
    const ComplexDense stored_a = random_inputs(a_rows, a_cols, t, rng), stored_b = random_inputs(b_rows, b_cols, t, rng);
    const ComplexDense c0 = random_inputs(M, N, t, rng), bias_row = random_inputs(1, N, t, rng);
    std::vector<std::complex<double>> bias(bias_row.v.begin(), bias_row.v.end());
    // A 16-bit C is rounded once by the GEMM or the pass that finishes it,
    // and once more where the bias is added after a GEMM.
    const int roundings = cs.bias ? 2 : 1;
    const ComplexReference ref =
        reference_product(op_of(stored_a, cs.op_a), op_of(stored_b, cs.op_b), c0, cs.bias ? &bias : nullptr,
                          alpha_of(cs), beta_of(cs), accumulation_roundoff(t, cs.allow_tf32),
                          roundings * output_roundoff(t), roundings * output_underflow(t));
    auto fill = [&](Operand& x, const GridLayoutSpec& s, int64_t rows, int64_t cols, const ComplexDense& global) {
      for_each_local(x, s, rows, cols, g, grid_row, grid_col, [&](int64_t i, int64_t j, int64_t gi, int64_t gj) {
        if (gi >= 0) x.local.set(i, j, global(gi, gj));
      });
    };
    fill(A, cs.layout_a, a_rows, a_cols, stored_a);
    fill(B, cs.layout_b, b_rows, b_cols, stored_b);
    if (cs.bias) fill(Bias, cs.layout_bias, 1, N, bias_row);
    // C: beta == 0 must not read it, so it holds NaN; otherwise C0.
    for_each_local(C, cs.layout_c, M, N, g, grid_row, grid_col, [&](int64_t i, int64_t j, int64_t gi, int64_t gj) {
      if (gi >= 0) C.local.set(i, j, cs.beta == 0.0 ? std::nan("") : c0(gi, gj));
    });
    LocalMatrix no_gathered;
    ScaleBuffers no_scales;
    if (!execute_on_buffers(cs, plan, A, B, C, Bias, no_gathered, no_scales, repeat)) ok = false;
    int reported = 0;
    const std::complex<double> sentinel = round_to(t, std::complex<double>(LocalMatrix::kSentinel));
    for_each_local(C, cs.layout_c, M, N, g, grid_row, grid_col, [&](int64_t i, int64_t j, int64_t gi, int64_t gj) {
      const std::complex<double> got = C.local.get(i, j);
      if (gi < 0) {
        // A position of the local array outside the matrix: untouched.
        if (got != sentinel) {
          if (reported++ < 3)
            std::fprintf(stderr, "rank %d: repeat %d: local C(%lld,%lld), outside the matrix, holds %.17g\n", g_rank,
                         repeat, static_cast<long long>(i), static_cast<long long>(j), got.real());
          ok = false;
        }
        return;
      }
      if (!matches_reference(got, ref, gi, gj, repeat, &reported)) ok = false;
    });
  }
  return ok;
}

bool run_case_unguarded(const Case& cs, uint64_t seed) {
  if (cs.operation == WEAVE_GEMM) return run_gemm_case(cs, seed);
  const bool device = cs.memory == WEAVE_MEMORY_DEVICE;
  if (device && !g_device_memory) {
    std::fprintf(stderr, "rank %d: a device-memory case, but this program installed no device memory\n", g_rank);
    return false;
  }
  GridInfo g;
  if (!make_grid(cs.grid, &g)) return false;
  int group_size = 0, group_rank = 0, grid_row = 0, grid_col = 0;
  CHECK_WEAVE(weave_grid_group(g.grid, g.group, &group_size, &group_rank));
  CHECK_WEAVE(weave_grid_coords(g.grid, &grid_row, &grid_col));
  const int group_index = g.group == WEAVE_GROUP_ROW ? grid_row : g.group == WEAVE_GROUP_COLUMN ? grid_col : 0;
  const int P = group_size;
  const bool block2d = cs.grid == GridKind::Block2D;

  const int64_t M = cs.m, N = cs.n, K = cs.k;
  const bool ag = cs.operation == WEAVE_AG_GEMM, rs = cs.operation == WEAVE_GEMM_RS;
  auto counts_of = [&](int64_t n, Shards pattern) {
    std::vector<int64_t> counts = make_counts(n / cs.count_unit, P, pattern);
    for (int64_t& x : counts) x *= cs.count_unit;
    counts.back() += n % cs.count_unit;
    return counts;
  };
  const std::vector<int64_t> m_counts = counts_of(M, cs.shards);
  const Shards other = other_shards(cs.shards);
  const std::vector<int64_t> n_counts = counts_of(N, other);
  const std::vector<int64_t> k_counts = counts_of(K, other);

  // Descriptors and local storage; the data is filled per repeat below.
  Operand A, B, C, Bias;
  const weave_dtype_t t = cs.dtype;  // C's and the bias's
  const weave_dtype_t ta = cs.a_type ? cs.a_type : t, tb = cs.b_type ? cs.b_type : t;
  const weave_memory_t mem = cs.memory;
  const std::vector<int64_t> none;
  const int64_t pad = cs.padded ? 3 : 0;
  // 2-D block panels: grid row i owns panels with K_i = K + i rows.
  const int prows = g.prows;
  std::vector<int64_t> k_rows(static_cast<size_t>(prows)), m_rows(static_cast<size_t>(prows), M),
      one(static_cast<size_t>(prows), 1);
  int64_t k_total = 0;
  for (int i = 0; i < prows; ++i) k_total += (k_rows[i] = K + i);
  if (!block2d) {
    // op(A) split by rows (AG) or columns (RS/AR); expressed on the stored A.
    const bool a_rows_split = ag == (cs.op_a == WEAVE_OP_N);
    const std::vector<int64_t>& a_counts = ag ? m_counts : k_counts;
    const int64_t a_rows = cs.op_a == WEAVE_OP_N ? M : K, a_cols = cs.op_a == WEAVE_OP_N ? K : M;
    if (!describe_operand("A", g, a_rows, a_cols, a_rows_split ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN,
                          a_rows_split ? a_counts : none, a_rows_split ? none : a_counts, ta, cs.order_a, pad, mem,
                          &A, cs.a_scale))
      return false;
    // op(B) split by columns (AG) or rows (RS/AR).
    const bool b_rows_split = ag == (cs.op_b != WEAVE_OP_N);
    const std::vector<int64_t>& b_counts = ag ? n_counts : k_counts;
    const int64_t b_rows = cs.op_b == WEAVE_OP_N ? K : N, b_cols = cs.op_b == WEAVE_OP_N ? N : K;
    if (!describe_operand("B", g, b_rows, b_cols, b_rows_split ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_BLOCK_COLUMN,
                          b_rows_split ? b_counts : none, b_rows_split ? none : b_counts, tb, cs.order_b, pad, mem,
                          &B, cs.b_scale))
      return false;
    const weave_distribution_t c_dist = ag ? WEAVE_DIST_BLOCK_COLUMN : rs ? WEAVE_DIST_BLOCK_ROW : WEAVE_DIST_REPLICATED;
    if (!describe_operand("C", g, M, N, c_dist, rs ? m_counts : none, ag ? n_counts : none, t, cs.order_c, pad, mem,
                          &C))
      return false;
    if (cs.bias && !describe_operand("bias", g, 1, N, ag ? WEAVE_DIST_BLOCK_COLUMN : WEAVE_DIST_REPLICATED, none,
                                     ag ? n_counts : none, t, cs.order_bias, cs.bias_ld_padding, mem, &Bias))
      return false;
  } else {
    // 2-D block over a prows x pcols grid, operation along grid rows. Only
    // AG-GEMM with op(A)=A^T fits every operand: A (K_i x M) with columns
    // split over the row, B (K_i x N) likewise, C (M x N) and bias (1 x N)
    // split by columns. The grid-wide matrices stack the panels.
    if (!describe_operand("A", g, k_total, M, WEAVE_DIST_BLOCK_2D, k_rows, m_counts, t, cs.order_a, pad, mem, &A))
      return false;
    if (!describe_operand("B", g, k_total, N, WEAVE_DIST_BLOCK_2D, k_rows, n_counts, t, cs.order_b, pad, mem, &B))
      return false;
    if (!describe_operand("C", g, prows * M, N, WEAVE_DIST_BLOCK_2D, m_rows, n_counts, t, cs.order_c, pad, mem, &C))
      return false;
    if (cs.bias && !describe_operand("bias", g, prows, N, WEAVE_DIST_BLOCK_2D, one, n_counts, t, cs.order_bias,
                                     cs.bias_ld_padding, mem, &Bias))
      return false;
  }

  // The group problem in op form, for the oracle, and the operands' data.
  // Scaled operands: op_a and op_b hold the values the oracle multiplies,
  // decoded FP8 times their scales; stored_a the FP8 values themselves.
  ComplexDense op_a, op_b, c0, stored_a;
  std::vector<std::complex<double>> bias(static_cast<size_t>(N));
  OperandScales a_scales, b_scales;
  ScaleBuffers scale_buffers;
  // A wire type: A's rows as they travel (their values, unscaled) and their
  // row-wise scales (1 for a type without); the product of the unquantized A.
  ComplexDense wire_a, unquantized_a;
  std::vector<float> wire_scales;
  scale_buffers.a.name = "A scales";
  scale_buffers.b.name = "B scales";
  auto scaled_values = [](const ComplexDense& values, const OperandScales& s, bool outer_is_row) {
    ComplexDense scaled = values;
    if (!s.scaled()) return scaled;
    for (int64_t j = 0; j < values.cols; ++j)
      for (int64_t i = 0; i < values.rows; ++i)
        scaled(i, j) = values(i, j) * (outer_is_row ? s.at(i, j) : s.at(j, i));
    return scaled;
  };
  auto generate = [&](uint64_t data_seed) {
    if (!block2d) {
      // Each group has its own problem (its own seed).
      std::mt19937_64 rng(data_seed + 1000003ULL * static_cast<uint64_t>(group_index));
      ComplexDense a_values = is_fp8(ta) ? as_complex(random_float8(M, K, ta, rng)) : random_inputs(M, K, ta, rng);
      if (cs.report_wire_error) {  // the reported error on normally distributed data
        std::normal_distribution<double> normal(0.0, 1.0);
        for (std::complex<double>& x : a_values.v) x = round_to(ta, normal(rng));
      }
      const ComplexDense b_values =
          is_fp8(tb) ? as_complex(random_float8(K, N, tb, rng)) : random_inputs(K, N, tb, rng);
      c0 = random_inputs(M, N, t, rng);
      const ComplexDense bias_row = random_inputs(1, N, t, rng);
      for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(j)] = bias_row(0, j);
      // Scales distributed like the data: A (M x K in op form) split along
      // M in AG-GEMM, along K in the reductions; B (K x N) along N or K.
      if (cs.a_scale != WEAVE_SCALE_NONE) {
        a_scales = make_scales(cs.a_scale, ag, ag ? m_counts : k_counts, M, K, rng);
        fill_scales(a_scales, group_rank, &scale_buffers.a, mem);
      }
      if (cs.b_scale != WEAVE_SCALE_NONE) {
        b_scales = make_scales(cs.b_scale, ag, ag ? n_counts : k_counts, N, K, rng);
        fill_scales(b_scales, group_rank, &scale_buffers.b, mem);
      }
      op_a = scaled_values(a_values, a_scales, true);
      op_b = scaled_values(b_values, b_scales, false);
      stored_a = op_of(a_values, cs.op_a);  // op(A) of it is a_values (for op C too: (X^H)^H = X)
      fill_operand(stored_a, &A);
      unquantized_a = op_a;
      if (cs.wire_type) {
        // The rows as they travel, by the documented rule (the tests' own
        // reading of it): what the oracle multiplies and the gathered
        // output returns.
        wire_a = ComplexDense(M, K);
        wire_scales.assign(static_cast<std::size_t>(M), 1.0f);
        for (int64_t i = 0; i < M; ++i) {
          std::vector<float> row(static_cast<std::size_t>(K));
          for (int64_t k = 0; k < K; ++k) row[static_cast<std::size_t>(k)] = static_cast<float>(a_values(i, k).real());
          if (is_fp8(cs.wire_type)) {
            wire_scales[static_cast<std::size_t>(i)] = reference_row_scale(row);
            const std::vector<unsigned> codes = reference_quantize_row(row, wire_scales[static_cast<std::size_t>(i)]);
            for (int64_t k = 0; k < K; ++k) wire_a(i, k) = reference_decode(kE4M3, codes[static_cast<std::size_t>(k)]);
          } else {
            for (int64_t k = 0; k < K; ++k) wire_a(i, k) = round_to(cs.wire_type, row[static_cast<std::size_t>(k)]);
          }
          for (int64_t k = 0; k < K; ++k)
            op_a(i, k) = wire_a(i, k) * static_cast<double>(wire_scales[static_cast<std::size_t>(i)]);
        }
      }
      fill_operand(op_of(b_values, cs.op_b), &B);
      fill_operand(c0, &C);
      if (cs.bias) fill_operand(bias_row, &Bias);
      return;
    }
    // 2-D block panels are cut from one grid-wide matrix.
    std::mt19937_64 grid_rng(data_seed);
    const ComplexDense gA = random_inputs(k_total, M, t, grid_rng), gB = random_inputs(k_total, N, t, grid_rng),
                gC = random_inputs(prows * M, N, t, grid_rng), gBias = random_inputs(prows, N, t, grid_rng);
    int64_t k0 = 0;
    for (int i = 0; i < grid_row; ++i) k0 += k_rows[i];
    const int64_t Ki = k_rows[grid_row];
    ComplexDense panel_a(Ki, M), panel_b(Ki, N);
    for (int64_t j = 0; j < M; ++j)
      for (int64_t i = 0; i < Ki; ++i) panel_a(i, j) = gA(k0 + i, j);
    for (int64_t j = 0; j < N; ++j)
      for (int64_t i = 0; i < Ki; ++i) panel_b(i, j) = gB(k0 + i, j);
    op_a = transpose(panel_a);
    op_b = panel_b;
    stored_a = panel_a;
    c0 = ComplexDense(M, N);
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t i = 0; i < M; ++i) c0(i, j) = gC(grid_row * M + i, j);
      bias[static_cast<size_t>(j)] = gBias(grid_row, j);
    }
    fill_operand(gA, &A);
    fill_operand(gB, &B);
    fill_operand(gC, &C);
    if (cs.bias) fill_operand(gBias, &Bias);
  };

  weave_plan_desc_t pd{};
  pd.operation = cs.operation;
  pd.group = g.group;
  pd.op_a = block2d ? WEAVE_OP_T : cs.op_a;
  pd.op_b = block2d ? WEAVE_OP_N : cs.op_b;
  pd.a = A.desc;
  pd.b = B.desc;
  pd.c = C.desc;
  pd.bias = cs.bias ? Bias.desc : nullptr;
  pd.algorithm = cs.algorithm;
  pd.direction = cs.direction;
  pd.chunks_per_shard = cs.chunks;
  pd.progress = cs.progress;
  pd.timeout_ms = 120000;
  pd.flags = (cs.gathered ? WEAVE_FLAG_GATHERED_OUTPUT : 0) | (cs.allow_tf32 ? WEAVE_FLAG_ALLOW_TF32 : 0) |
             (cs.reduce_in_accumulation_type ? WEAVE_FLAG_REDUCE_IN_ACCUMULATION_TYPE : 0);
  pd.wire_type = cs.wire_type;
  weave_plan_t plan = nullptr;
  CHECK_WEAVE(weave_plan_create(g.grid, &pd, &plan));
  const PlanGuard plan_guard(plan);
  weave_plan_info_t info{};
  CHECK_WEAVE(weave_plan_get_info(plan, &info));
  if (info.group_size != P || info.group_rank != group_rank) {
    std::fprintf(stderr, "rank %d: plan reports group %d/%d, expected %d/%d\n", g_rank, info.group_rank,
                 info.group_size, group_rank, P);
    return false;
  }
  if (!cs.expect_in_describe.empty()) {
    const char* text = nullptr;
    CHECK_WEAVE(weave_plan_describe(plan, &text));
    int has = text && std::strstr(text, cs.expect_in_describe.c_str()) ? 1 : 0, all_have = 0;
    if (!has)
      std::fprintf(stderr, "rank %d: the plan's description lacks \"%s\": %s\n", g_rank,
                   cs.expect_in_describe.c_str(), text ? text : "(no description)");
    // Every rank leaves together (a rank executing alone would wait for the others).
    MPI_Allreduce(&has, &all_have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_have) return false;
  }
  if (cs.algorithm != WEAVE_ALGORITHM_AUTO && P > 1 && info.algorithm != cs.algorithm) {
    std::fprintf(stderr, "rank %d: plan runs algorithm %d, asked for %d\n", g_rank, info.algorithm, cs.algorithm);
    return false;
  }
  const weave_backend_t expected_backend = device ? WEAVE_BACKEND_CUDA : WEAVE_BACKEND_HOST;
  if (info.backend != expected_backend) {
    std::fprintf(stderr, "rank %d: plan runs backend %d, expected %d for %s memory\n", g_rank, info.backend,
                 expected_backend, device ? "device" : "host");
    return false;
  }

  // Gathered output: the stored A of the whole group, with a padded ld.
  LocalMatrix gathered;
  if (cs.gathered) {
    gathered.name = "gathered A";
    gathered.dtype = cs.wire_type ? cs.wire_type : ta;  // A's rows as they travel
    gathered.order = cs.order_a;
    // Stored like A: op N: M x K; op T (and 2-D panels): K x M.
    const bool op_n = !block2d && cs.op_a == WEAVE_OP_N;
    const int64_t group_k = block2d ? k_rows[grid_row] : K;
    gathered.rows = op_n ? M : group_k;
    gathered.cols = op_n ? group_k : M;
    gathered.ld = cs.order_a == WEAVE_ORDER_COLUMN_MAJOR ? std::max<int64_t>(1, gathered.rows) + 2
                                                         : std::max<int64_t>(1, gathered.cols) + 2;
    gathered.allocate(mem);
  }
  // The gathered A's scales: tensor-wise one per group rank, else the
  // layout of the whole op(A) (M x K). A wire type with scales gives
  // row-wise ones.
  LocalMatrix& gathered_scales = scale_buffers.gathered;
  gathered_scales.name = "gathered A scales";
  const weave_scale_mode_t gathered_mode =
      cs.wire_type ? (is_fp8(cs.wire_type) ? WEAVE_SCALE_ROW_WISE : WEAVE_SCALE_NONE) : cs.a_scale;
  if (cs.gathered && gathered_mode != WEAVE_SCALE_NONE) {
    gathered_scales.dtype = gathered_mode == WEAVE_SCALE_MXFP8 ? kScaleE8M0 : WEAVE_FLOAT32;
    gathered_scales.rows = gathered_mode == WEAVE_SCALE_TENSOR ? P : reference_scale_elements(gathered_mode, M, K);
    gathered_scales.cols = 1;
    gathered_scales.ld = std::max<int64_t>(1, gathered_scales.rows);
    gathered_scales.allocate(mem);
    if (info.gathered_a_scale_elements != gathered_scales.rows) {
      std::fprintf(stderr, "rank %d: plan info says %lld gathered scales, expected %lld\n", g_rank,
                   static_cast<long long>(info.gathered_a_scale_elements), static_cast<long long>(gathered_scales.rows));
      return false;
    }
  }

  bool ok = true;
  ComplexReference ref;
  for (int repeat = 0; repeat < cs.repeats && ok; ++repeat) {
    if (repeat == 0 || cs.fresh_inputs) {
      generate(seed + 0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(repeat));
      // A 16-bit C is rounded once: by the step that finishes a reduction
      // (partial sums stay float32), or by AG-GEMM's GEMM, and once more
      // where AG-GEMM adds the bias afterwards. The algorithms that move
      // products (direct; pipelined for 16-bit C) round each rank's product
      // to C's type before it travels: one more, unless they move the
      // accumulation type; the hierarchical one rounds each node's partial
      // sum once more before it leaves the node.
      const bool sixteen_bit = t == WEAVE_FLOAT16 || t == WEAVE_BFLOAT16;
      const bool products = !ag && !cs.reduce_in_accumulation_type &&
                            (info.algorithm == WEAVE_ALGORITHM_DIRECT || info.algorithm == WEAVE_ALGORITHM_HIERARCHICAL ||
                             (info.algorithm == WEAVE_ALGORITHM_PIPELINED && sixteen_bit));
      // WEAVE_OWN_PRODUCT=accumulates (the environment the library reads):
      // the direct algorithm rounds the received products' sum once more
      // before the own GEMM adds onto it.
      const char* own_product = std::getenv("WEAVE_OWN_PRODUCT");
      const bool accumulates = own_product && std::string(own_product) == "accumulates" &&
                               info.algorithm == WEAVE_ALGORITHM_DIRECT;
      const int roundings = (info.algorithm == WEAVE_ALGORITHM_HIERARCHICAL || accumulates) && products ? 3
                            : (ag && cs.bias) || products                                              ? 2
                                                                                                       : 1;
      // FP8 GEMMs on GPUs: Hopper's tensor cores sum FP8 products in less
      // than float32 between cuBLASLt's promotions to float32 (about 14
      // bits, by DeepSeek-V3's report on H800): a bound for that, not
      // float32's (not measured here; the GPU run decides).
      const bool fp8_on_gpu = device && (is_fp8(ta) || is_fp8(cs.wire_type));
      ref = reference_product(op_a, op_b, c0, cs.bias ? &bias : nullptr, alpha_of(cs), beta_of(cs),
                              fp8_on_gpu ? 0x1p-14 : accumulation_roundoff(t, cs.allow_tf32),
                              roundings * output_roundoff(t), roundings * output_underflow(t));
    }
    // Reset C: beta == 0 must not read it, so it holds NaN; otherwise C0.
    const int64_t c_row0 = C.row_offset - (block2d ? grid_row * M : 0);
    for (int64_t j = 0; j < C.local.cols; ++j)
      for (int64_t i = 0; i < C.local.rows; ++i)
        C.local.set(i, j, cs.beta == 0.0 ? std::nan("") : c0(c_row0 + i, C.col_offset + j));
    for (int64_t j = 0; j < gathered.cols; ++j)
      for (int64_t i = 0; i < gathered.rows; ++i) gathered.set(i, j, std::nan(""));
    for (int64_t i = 0; i < gathered_scales.rows; ++i) gathered_scales.set(i, 0, std::nan(""));
    if (!execute_on_buffers(cs, plan, A, B, C, Bias, gathered, scale_buffers, repeat)) ok = false;
    int reported = 0;
    for (int64_t j = 0; j < C.local.cols; ++j)
      for (int64_t i = 0; i < C.local.rows; ++i)
        if (!matches_reference(C.local.get(i, j), ref, c_row0 + i, C.col_offset + j, repeat, &reported)) ok = false;
    if (cs.report_wire_error) {
      // ||C - alpha op(A) op(B)|| / ||alpha op(A) op(B)|| (Frobenius) with the
      // unquantized A, over the whole C (each rank's columns are its own).
      double sums[2] = {0.0, 0.0}, all[2] = {0.0, 0.0};
      for (int64_t j = 0; j < C.local.cols; ++j)
        for (int64_t i = 0; i < C.local.rows; ++i) {
          double exact = 0.0;
          for (int64_t k = 0; k < K; ++k)
            exact += unquantized_a(c_row0 + i, k).real() * op_b(k, C.col_offset + j).real();
          exact *= cs.alpha;
          const double got = C.local.get(i, j).real();
          sums[0] += (got - exact) * (got - exact);
          sums[1] += exact * exact;
        }
      MPI_Allreduce(sums, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      const double relative = std::sqrt(all[0] / all[1]);
      if (g_rank == 0)
        std::printf("wire %s, A %s, M=%lld N=%lld K=%lld: relative Frobenius error of C against the unquantized "
                    "product %.4f\n",
                    dtype_short_name(cs.wire_type), dtype_short_name(ta), static_cast<long long>(M),
                    static_cast<long long>(N), static_cast<long long>(K), relative);
      // e4m3 keeps 3 mantissa bits: a relative error of a few percent, far
      // below what a quantization with wrong scales gives.
      if (!(relative < 0.06)) ok = false;
    }
    if (cs.gathered) {
      // The rows as they travelled: A itself, or its quantized rows, bit for bit.
      const ComplexDense& travelled = cs.wire_type ? op_of(wire_a, cs.op_a) : stored_a;
      for (int64_t j = 0; j < gathered.cols; ++j)
        for (int64_t i = 0; i < gathered.rows; ++i)
          if (gathered.get(i, j) != round_to(gathered.dtype, travelled(i, j))) {
            if (ok)
              std::fprintf(stderr, "rank %d: gathered A(%lld,%lld) = %g, expected %g\n", g_rank, (long long)i,
                           (long long)j, gathered.get(i, j).real(), travelled(i, j).real());
            ok = false;
          }
      if (cs.wire_type && gathered_mode == WEAVE_SCALE_ROW_WISE)
        for (int64_t i = 0; i < M; ++i)
          if (gathered_scales.get(i, 0).real() != wire_scales[static_cast<std::size_t>(i)]) {
            std::fprintf(stderr, "rank %d: gathered scale of row %lld is %.9g, expected %.9g\n", g_rank,
                         static_cast<long long>(i), gathered_scales.get(i, 0).real(),
                         wire_scales[static_cast<std::size_t>(i)]);
            ok = false;
            break;
          }
      // Every scale of a gathered row, where the layout of the whole op(A) puts it.
      if (cs.a_scale == WEAVE_SCALE_TENSOR) {
        for (int q = 0; q < P; ++q)
          if (m_counts[q] > 0 && gathered_scales.get(q, 0).real() != a_scales.values[q][0]) {
            std::fprintf(stderr, "rank %d: gathered scale of rank %d wrong\n", g_rank, q);
            ok = false;
          }
      } else if (cs.a_scale != WEAVE_SCALE_NONE) {
        int reported_scales = 0;
        for (int64_t k = 0; k < K; ++k)
          for (int64_t i = 0; i < M; ++i) {
            const int64_t at = reference_scale_index(cs.a_scale, i, k, M, K);
            if (gathered_scales.get(at, 0).real() != a_scales.at(i, k) && reported_scales++ < 3) {
              std::fprintf(stderr, "rank %d: gathered scale %lld (of row %lld, K index %lld) is %g, expected %g\n",
                           g_rank, static_cast<long long>(at), static_cast<long long>(i), static_cast<long long>(k),
                           gathered_scales.get(at, 0).real(), a_scales.at(i, k));
              ok = false;
            }
          }
      }
    }
  }
  return ok;
}

// Argument parsing of the case-list programs.
bool parse_types(const std::string& text, std::vector<weave_dtype_t>* types) {
  types->clear();
  if (text == "all") {
    *types = {WEAVE_FLOAT64, WEAVE_FLOAT32, WEAVE_FLOAT16, WEAVE_BFLOAT16};  // the real types
    return true;
  }
  std::stringstream list(text);
  std::string name;
  while (std::getline(list, name, ',')) {
    bool known = false;
    for (weave_dtype_t t :
         {WEAVE_FLOAT64, WEAVE_FLOAT32, WEAVE_FLOAT16, WEAVE_BFLOAT16, WEAVE_COMPLEX128, WEAVE_COMPLEX64})
      if (name == dtype_short_name(t)) {
        types->push_back(t);
        known = true;
      }
    if (!known) return false;
  }
  return !types->empty();
}

struct ParsedArguments {
  CaseListOptions options;
  unsigned long long seed = 0;
  std::string error;
};

ParsedArguments parse_arguments(int argc, char** argv) {
  ParsedArguments parsed;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--quick") {
      parsed.options.quick = true;
    } else if (arg == "--seed" && has_value) {
      parsed.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--memory" && has_value) {
      const std::string value = argv[++i];
      if (value == "host")
        parsed.options.memory = WEAVE_MEMORY_HOST;
      else if (value == "device")
        parsed.options.memory = WEAVE_MEMORY_DEVICE;
      else
        parsed.error = "--memory " + value + ": expected host or device";
    } else if (arg == "--types" && has_value) {
      const std::string value = argv[++i];
      if (!parse_types(value, &parsed.options.types))
        parsed.error = "--types " + value + ": expected all or a comma-separated list of f64, f32, f16, bf16, c128, c64";
    } else {
      parsed.error = "unknown argument " + arg + " (expected --quick, --seed S, --memory host|device, --types LIST)";
    }
  }
  return parsed;
}

// Every rank's answer to `local_ok`, agreed (MPI_MIN).
bool all_ranks(bool local_ok) {
  int mine = local_ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

}  // namespace

void set_device_memory(DeviceMemory* memory) { g_device_memory = memory; }

bool run_case(const Case& c, uint64_t seed) {
  try {
    return run_case_unguarded(c, seed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", g_rank, e.what());
    return false;
  }
}

int run_case_list(int argc, char** argv, const CaseGenerator& make_cases) {
  // Thread-level MPI so cases may use the host progress thread.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const ParsedArguments parsed = parse_arguments(argc, argv);
  if (!parsed.error.empty()) {
    if (g_rank == 0) std::fprintf(stderr, "%s\n", parsed.error.c_str());
    MPI_Finalize();
    return 1;
  }
  const CaseListOptions& options = parsed.options;
  if (options.memory == WEAVE_MEMORY_DEVICE) {
    // Device cases need a device on every rank; without one the program is
    // skipped (exit code kSkipExitCode), never passed.
    if (!g_device_memory) {
      if (g_rank == 0) std::fprintf(stderr, "--memory device: this program was built without device support\n");
      MPI_Finalize();
      return 1;
    }
    std::string why_not;
    const bool attached = g_device_memory->attach(&why_not);
    if (!all_ranks(attached)) {
      if (!attached) std::printf("SKIPPED on rank %d: %s\n", g_rank, why_not.c_str());
      std::fflush(stdout);
      MPI_Finalize();
      return kSkipExitCode;
    }
  }
  unsigned long long seed = parsed.seed;
  // Fresh data every run unless a seed is given; rank 0's choice for all.
  if (seed == 0) seed = (static_cast<unsigned long long>(std::random_device{}()) << 32) ^ std::random_device{}();
  MPI_Bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

  std::mt19937_64 rng(seed);
  std::vector<Case> cases = make_cases(options, rng);
  for (Case& c : cases) c.memory = options.memory;
  int failures = 0;
  // Wall time of every case (plan creation, executes, checks), so that a
  // slow list says which of its cases are slow.
  std::vector<std::pair<double, std::size_t>> seconds;
  seconds.reserve(cases.size());
  const char* each = std::getenv("WEAVE_TEST_CASE_TIMES");
  const bool print_each = each != nullptr && std::strcmp(each, "0") != 0 && *each != '\0';
  const double list_start = MPI_Wtime();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const uint64_t case_seed = seed + 7919ULL * i;
    const double start = MPI_Wtime();
    if (!all_ranks(run_case(cases[i], case_seed))) {
      ++failures;
      if (g_rank == 0)
        std::printf("FAIL case %zu (replay: --seed %llu): %s\n", i, seed, cases[i].name().c_str());
    }
    seconds.emplace_back(MPI_Wtime() - start, i);
    // Every case's time as it ends (WEAVE_TEST_CASE_TIMES=1), for a list
    // that may be stopped before its summary.
    if (g_rank == 0 && print_each) {
      std::printf("  %8.1f ms  case %zu: %s\n", 1e3 * seconds.back().first, i, cases[i].name().c_str());
      std::fflush(stdout);
    }
  }
  if (g_rank == 0 && !seconds.empty()) {
    const double total = MPI_Wtime() - list_start;
    const std::size_t shown = std::min<std::size_t>(5, seconds.size());
    std::partial_sort(seconds.begin(), seconds.begin() + static_cast<std::ptrdiff_t>(shown), seconds.end(),
                      [](const auto& x, const auto& y) { return x.first > y.first; });
    std::printf("%.2f s for %zu cases (%.1f ms each on average); the slowest:\n", total, cases.size(),
                1e3 * total / static_cast<double>(cases.size()));
    for (std::size_t j = 0; j < shown; ++j)
      std::printf("  %8.1f ms  case %zu: %s\n", 1e3 * seconds[j].first, seconds[j].second,
                  cases[seconds[j].second].name().c_str());
  }
  if (g_rank == 0)
    std::printf("%s: %zu cases on %d ranks, %s memory, %d failed (seed %llu)\n", failures ? "FAILED" : "PASSED",
                cases.size(), g_size, options.memory == WEAVE_MEMORY_DEVICE ? "device" : "host", failures, seed);
  destroy_grids();
  MPI_Finalize();
  return failures ? 1 : 0;
}

}  // namespace weave_test
