// The public structs' struct_size and the typed buffer checks, through the
// public API at 1-4 ranks:
//   - a struct_size of 0, or one that no version of the struct had, is
//     WEAVE_ERROR_INVALID_VALUE naming the struct, on every rank even when
//     only one rank passed it;
//   - execute arguments that say their buffers hold another element type, or
//     fewer elements than the local block, fail on every rank before
//     anything is written;
//   - the C++ interface's typed execute checks its pointers' types against
//     the plan (a float buffer on an f64 plan), on every rank;
//   - weave_plan_get_info reports the element types, the plan's status and
//     its scale modes, and writes no more of its struct than the caller's
//     size says;
//   - structs of the size before the FP8 fields (scale_mode, the scale
//     buffers) and of the size with them but before the block-cyclic and
//     complex fields work, and what lies beyond them is never read.
// Prints PASS or FAIL per check; exit code 1 if any failed.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "weave/weave.hpp"

namespace {

int g_rank = 0, g_size = 1, g_failed = 0;

void check(const char* name, const std::function<bool()>& body) {
  const bool mine = body();
  int ok = mine ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) ++g_failed;
  if (g_rank == 0) std::printf("%s %s\n", all ? "PASS" : "FAIL", name);
}

bool expect(weave_status_t got, weave_status_t want, const char* word, const char* what) {
  const std::string message = weave_last_error();
  if (got != want || (word && message.find(word) == std::string::npos)) {
    std::fprintf(stderr, "rank %d: %s returned %s (\"%s\"), expected %s mentioning \"%s\"\n", g_rank, what,
                 weave_status_string(got), message.c_str(), weave_status_string(want), word ? word : "");
    return false;
  }
  return true;
}

// An f64 AG-GEMM over every rank: M x K rows split, K x N columns split.
struct Problem {
  weave::Grid grid{MPI_COMM_WORLD};
  weave::Matrix a{grid, weave::block_rows(9, 4, WEAVE_FLOAT64)};
  weave::Matrix b{grid, weave::block_cols(4, 5, WEAVE_FLOAT64)};
  weave::Matrix c{grid, weave::block_cols(9, 5, WEAVE_FLOAT64)};
  weave::Matrix bias{grid, weave::block_cols(1, 5, WEAVE_FLOAT64)};
  weave::Plan plan{grid, weave::PlanDesc(WEAVE_AG_GEMM, a, b, c).bias(bias)};
  std::vector<double> a_local = std::vector<double>(static_cast<size_t>(a.local_elements()) + 1, 1.0);
  std::vector<double> b_local = std::vector<double>(static_cast<size_t>(b.local_elements()) + 1, 2.0);
  std::vector<double> c_local = std::vector<double>(static_cast<size_t>(c.local_elements()) + 1, -7.0);
  std::vector<double> bias_local = std::vector<double>(static_cast<size_t>(bias.local_elements()) + 1, 0.5);

  weave_execute_args_t args() {
    weave_execute_args_t x = WEAVE_EXECUTE_ARGS_INIT;
    x.alpha = 1.0;
    x.a = a_local.data();
    x.b = b_local.data();
    x.c = c_local.data();
    x.bias = bias_local.data();
    return x;
  }
  bool c_untouched() const {
    for (double v : c_local)
      if (v != -7.0) return false;
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  const int last = g_size - 1;  // the rank that makes the mistake alone
  {
    weave::Grid grid(MPI_COMM_WORLD);

    check("matrix descriptor with struct_size 0 on one rank", [&] {
      weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
      d.rows = 4;
      d.cols = 4;
      d.dtype = WEAVE_FLOAT64;
      d.distribution = WEAVE_DIST_REPLICATED;
      if (g_rank == last) d.struct_size = 0;
      weave_matrix_t m = nullptr;
      const bool ok = expect(weave_matrix_create(grid.get(), &d, &m), WEAVE_ERROR_INVALID_VALUE,
                             "struct_size is 0", "weave_matrix_create") && m == nullptr;
      weave_matrix_destroy(m);
      return ok;
    });

    check("matrix descriptor with a struct_size no version had", [&] {
      weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
      d.rows = 4;
      d.cols = 4;
      d.dtype = WEAVE_FLOAT64;
      d.distribution = WEAVE_DIST_REPLICATED;
      d.struct_size = sizeof(weave_matrix_desc_t) + 8;  // a newer header's, say
      weave_matrix_t m = nullptr;
      const bool ok =
          expect(weave_matrix_create(grid.get(), &d, &m), WEAVE_ERROR_INVALID_VALUE, "weave_matrix_desc_t",
                 "weave_matrix_create");
      weave_matrix_destroy(m);
      return ok;
    });

    check("matrix descriptor of Weave 0.2's size (before scale_mode and the block-cyclic fields)", [&] {
      // A program built against 0.2's header: its struct ends at memory, and
      // the fields appended since, which it never had, read as zero.
      weave_matrix_desc_t d{};
      const std::size_t old_size = offsetof(weave_matrix_desc_t, scale_mode);
      // The bytes past 0.2's struct are garbage the library must not read.
      std::memset(static_cast<void*>(reinterpret_cast<unsigned char*>(&d) + old_size), 0x5A, sizeof d - old_size);
      d.struct_size = old_size;
      d.rows = 6;
      d.cols = 4;
      d.dtype = WEAVE_FLOAT64;
      d.distribution = WEAVE_DIST_BLOCK_ROW;
      d.group = WEAVE_GROUP_GRID;
      d.row_counts = nullptr;
      d.col_counts = nullptr;
      d.ld = 0;
      d.order = WEAVE_ORDER_COLUMN_MAJOR;
      d.memory = WEAVE_MEMORY_HOST;
      weave_matrix_t m = nullptr;
      bool ok = expect(weave_matrix_create(grid.get(), &d, &m), WEAVE_SUCCESS, nullptr, "weave_matrix_create");
      weave_matrix_destroy(m);
      // A block-cyclic matrix needs the fields 0.2 lacks: its mb reads as 0.
      d.distribution = WEAVE_DIST_BLOCK_CYCLIC;
      m = nullptr;
      ok = expect(weave_matrix_create(grid.get(), &d, &m), WEAVE_ERROR_INVALID_VALUE, "mb = 0",
                  "weave_matrix_create") && ok;
      weave_matrix_destroy(m);
      return ok;
    });

    Problem p;
    // An execute with arguments of an earlier size, the bytes past it
    // garbage the library must not read: real scalars, and C = A B + bias
    // with A all 1, B all 2 (K = 4), 8.5 everywhere in the block.
    auto runs_with_size = [&](std::size_t old_size) {
      weave_execute_args_t x = p.args();
      std::memset(static_cast<void*>(reinterpret_cast<unsigned char*>(&x) + old_size), 0x7F, sizeof x - old_size);
      x.struct_size = old_size;
      const bool ran = expect(weave_execute_ex(p.plan.get(), &x), WEAVE_SUCCESS, nullptr, "weave_execute_ex");
      bool right = true;
      const int64_t rows = p.c.local_rows(), cols = p.c.local_cols(), ld = p.c.ld();
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < rows; ++i) right = right && p.c_local[static_cast<size_t>(i + j * ld)] == 8.5;
      std::fill(p.c_local.begin(), p.c_local.end(), -7.0);
      return ran && right;
    };
    check("plan descriptor with struct_size 0 on one rank", [&] {
      weave_plan_desc_t d = WEAVE_PLAN_DESC_INIT;
      d.operation = WEAVE_AG_GEMM;
      d.a = p.a.get();
      d.b = p.b.get();
      d.c = p.c.get();
      if (g_rank == last) d.struct_size = 0;
      weave_plan_t plan = nullptr;
      const bool ok = expect(weave_plan_create(p.grid.get(), &d, &plan), WEAVE_ERROR_INVALID_VALUE,
                             "weave_plan_desc_t", "weave_plan_create");
      weave_plan_destroy(plan);
      return ok;
    });

    check("plan info with struct_size 0", [&] {
      weave_plan_info_t info{};
      info.struct_size = 0;
      return expect(weave_plan_get_info(p.plan.get(), &info), WEAVE_ERROR_INVALID_VALUE, "weave_plan_info_t",
                    "weave_plan_get_info");
    });

    check("plan info reports the element types", [&] {
      const weave_plan_info_t info = p.plan.info();
      return info.a_type == WEAVE_FLOAT64 && info.b_type == WEAVE_FLOAT64 && info.c_type == WEAVE_FLOAT64 &&
             info.bias_type == WEAVE_FLOAT64 && info.struct_size == sizeof(weave_plan_info_t);
    });

    check("plan info of the size before status was appended: accepted, nothing written past it", [&] {
      weave_plan_info_t info{};
      info.struct_size = offsetof(weave_plan_info_t, status);
      info.status = static_cast<weave_status_t>(12345);
      return weave_plan_get_info(p.plan.get(), &info) == WEAVE_SUCCESS && info.c_type == WEAVE_FLOAT64 &&
             static_cast<int>(info.status) == 12345;
    });

    check("plan info of the size before the scale fields: accepted, nothing written past it", [&] {
      weave_plan_info_t info{};
      // The size of that version: its last field rounded up to the struct's alignment.
      info.struct_size = (offsetof(weave_plan_info_t, a_scale_mode) + alignof(weave_plan_info_t) - 1) /
                         alignof(weave_plan_info_t) * alignof(weave_plan_info_t);
      info.a_scale_elements = 12345;
      return weave_plan_get_info(p.plan.get(), &info) == WEAVE_SUCCESS && info.status == WEAVE_SUCCESS &&
             info.a_scale_elements == 12345;
    });

    check("plan info reports no scales for an f64 plan", [&] {
      const weave_plan_info_t info = p.plan.info();
      return info.a_scale_mode == WEAVE_SCALE_NONE && info.b_scale_mode == WEAVE_SCALE_NONE &&
             info.a_scale_elements == 0 && info.b_scale_elements == 0;
    });

    // Programs built before the scale fields: a matrix descriptor that ends
    // at `memory` (scale_mode taken as WEAVE_SCALE_NONE), execute arguments
    // that end at gathered_a_elements (no scales).
    check("matrix descriptor of the size before scale_mode", [&] {
      weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
      d.rows = 4;
      d.cols = 4;
      d.dtype = WEAVE_FLOAT64;
      d.distribution = WEAVE_DIST_REPLICATED;
      d.struct_size = offsetof(weave_matrix_desc_t, scale_mode);
      d.scale_mode = static_cast<weave_scale_mode_t>(99);  // beyond the caller's struct: never read
      weave_matrix_t m = nullptr;
      const bool ok = expect(weave_matrix_create(grid.get(), &d, &m), WEAVE_SUCCESS, nullptr, "weave_matrix_create");
      weave_matrix_destroy(m);
      return ok;
    });

    check("matrix descriptor of the FP8 header's size (scale_mode, no block-cyclic fields)", [&] {
      weave_matrix_desc_t d = WEAVE_MATRIX_DESC_INIT;
      const std::size_t old_size = (offsetof(weave_matrix_desc_t, mb) + alignof(weave_matrix_desc_t) - 1) /
                                   alignof(weave_matrix_desc_t) * alignof(weave_matrix_desc_t);
      // The bytes past that struct are garbage the library must not read.
      std::memset(static_cast<void*>(reinterpret_cast<unsigned char*>(&d) + old_size), 0x5A, sizeof d - old_size);
      d.struct_size = old_size;
      d.rows = 2 * g_size;
      d.cols = 3;
      d.dtype = WEAVE_FLOAT8_E4M3;
      d.distribution = WEAVE_DIST_BLOCK_ROW;
      d.scale_mode = WEAVE_SCALE_ROW_WISE;
      weave_matrix_t m = nullptr;
      int64_t rows = -1, cols = -1;
      const bool ok = expect(weave_matrix_create(grid.get(), &d, &m), WEAVE_SUCCESS, nullptr, "weave_matrix_create") &&
                      weave_matrix_local_shape(m, &rows, &cols) == WEAVE_SUCCESS && rows == 2 && cols == 3;
      weave_matrix_destroy(m);
      return ok;
    });

    check("execute arguments of the FP8 header's size (scales, no alpha_imag): real scalars, and it runs",
          [&] { return runs_with_size(offsetof(weave_execute_args_t, alpha_imag)); });

    check("execute arguments of the size before the scales", [&] {
      weave_execute_args_t x = p.args();
      x.struct_size = offsetof(weave_execute_args_t, a_scale);
      x.a_scale = &x;  // beyond the caller's struct: never read
      const bool ok = expect(weave_execute_ex(p.plan.get(), &x), WEAVE_SUCCESS, nullptr, "weave_execute_ex");
      std::fill(p.c_local.begin(), p.c_local.end(), -7.0);  // the checks below expect C untouched
      return ok;
    });

    check("plan descriptor of the size before wire_type", [&] {
      weave_plan_desc_t d = WEAVE_PLAN_DESC_INIT;
      d.operation = WEAVE_AG_GEMM;
      d.a = p.a.get();
      d.b = p.b.get();
      d.c = p.c.get();
      d.struct_size = (offsetof(weave_plan_desc_t, wire_type) + alignof(weave_plan_desc_t) - 1) /
                      alignof(weave_plan_desc_t) * alignof(weave_plan_desc_t);
      d.wire_type = static_cast<weave_dtype_t>(99);  // beyond the caller's struct: never read
      weave_plan_t plan = nullptr;
      weave_plan_info_t info = WEAVE_PLAN_INFO_INIT;
      const bool ok = expect(weave_plan_create(p.grid.get(), &d, &plan), WEAVE_SUCCESS, nullptr, "weave_plan_create") &&
                      weave_plan_get_info(plan, &info) == WEAVE_SUCCESS && info.wire_type == WEAVE_FLOAT64;
      weave_plan_destroy(plan);
      return ok;
    });

    check("plan info says a plan that has not failed can execute", [&] {
      return p.plan.info().status == WEAVE_SUCCESS;
    });

    check("execute arguments with struct_size 0 on one rank", [&] {
      weave_execute_args_t x = p.args();
      if (g_rank == last) x.struct_size = 0;
      return expect(weave_execute_ex(p.plan.get(), &x), WEAVE_ERROR_INVALID_VALUE, "weave_execute_args_t",
                    "weave_execute_ex") &&
             p.c_untouched();
    });

    // The checks above leave the plan usable (they fail before any step).
    check("execute arguments saying A holds f32 on one rank", [&] {
      weave_execute_args_t x = p.args();
      if (g_rank == last) {
        x.buffer_checks = WEAVE_CHECK_TYPES;
        x.a_type = WEAVE_FLOAT32;
      }
      return expect(weave_execute_ex(p.plan.get(), &x), WEAVE_ERROR_UNSUPPORTED_TYPE, "f32", "weave_execute_ex") &&
             p.c_untouched();
    });

    check("execute arguments saying C is too small on one rank", [&] {
      weave_execute_args_t x = p.args();
      x.buffer_checks = WEAVE_CHECK_ELEMENTS;
      x.a_elements = p.a.local_elements();
      x.b_elements = p.b.local_elements();
      x.c_elements = p.c.local_elements() - (g_rank == last ? 1 : 0);
      x.bias_elements = p.bias.local_elements();
      const bool c_empty = p.c.local_elements() == 0;
      // A rank whose C is empty cannot hold too few elements; then no rank errs.
      int any_nonempty = 0, mine = (g_rank == last && !c_empty) ? 1 : 0;
      MPI_Allreduce(&mine, &any_nonempty, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (!any_nonempty) return expect(weave_execute_ex(p.plan.get(), &x), WEAVE_SUCCESS, nullptr, "execute");
      return expect(weave_execute_ex(p.plan.get(), &x), WEAVE_ERROR_INVALID_VALUE, "elements", "weave_execute_ex") &&
             p.c_untouched();
    });

    check("execute arguments with unknown buffer_checks bits", [&] {
      weave_execute_args_t x = p.args();
      x.buffer_checks = 64;
      return expect(weave_execute_ex(p.plan.get(), &x), WEAVE_ERROR_INVALID_VALUE, "buffer_checks",
                    "weave_execute_ex") &&
             p.c_untouched();
    });

    check("execute arguments with an imaginary alpha on a real plan, on one rank", [&] {
      weave_execute_args_t x = p.args();
      if (g_rank == last) x.alpha_imag = 0.5;
      return expect(weave_execute_ex(p.plan.get(), &x), WEAVE_ERROR_INVALID_VALUE, "alpha_imag", "weave_execute_ex") &&
             p.c_untouched();
    });

    check("execute arguments of Weave 0.2's size (before the scales and alpha_imag): real scalars, and it runs",
          [&] { return runs_with_size(offsetof(weave_execute_args_t, a_scale)); });

    check("C++ typed execute with float buffers on an f64 plan", [&] {
      std::vector<float> af(p.a_local.size()), bf(p.b_local.size()), cf(p.c_local.size(), -7.0f);
      try {
        p.plan.execute(1.0, af.data(), bf.data(), 0.0, cf.data());
      } catch (const weave::Error& e) {
        for (float v : cf)
          if (v != -7.0f) return false;
        return e.status() == WEAVE_ERROR_UNSUPPORTED_TYPE &&
               std::string(e.what()).find("f32") != std::string::npos;
      }
      std::fprintf(stderr, "rank %d: no exception\n", g_rank);
      return false;
    });

    check("C++ typed execute of a complex plan with complex alpha", [&] {
      using Z = std::complex<double>;
      weave::Matrix a(grid, weave::block_rows(9, 4, WEAVE_COMPLEX128)), b(grid, weave::block_cols(4, 5, WEAVE_COMPLEX128)),
          c(grid, weave::block_cols(9, 5, WEAVE_COMPLEX128));
      weave::Plan plain(grid, weave::PlanDesc(WEAVE_AG_GEMM, a, b, c));
      std::vector<Z> al(static_cast<size_t>(a.local_elements()) + 1, Z(1, 1)),
          bl(static_cast<size_t>(b.local_elements()) + 1, Z(2, 0)), cl(static_cast<size_t>(c.local_elements()) + 1);
      plain.execute(Z(0, 1), al.data(), bl.data(), Z(0, 0), cl.data());
      // Every element: i * sum_k (1 + i) * 2 = i * (8 + 8i) = -8 + 8i (K = 4).
      const int64_t cols = c.local_cols(), ld = c.ld();
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < 9; ++i)
          if (cl[static_cast<size_t>(i + j * ld)] != Z(-8, 8)) return false;
      // A real scalar on a complex plan is the real number.
      plain.execute(2.0, al.data(), bl.data(), 0.0, cl.data());
      return cl[0] == Z(16, 16) || c.local_cols() == 0;
    });

    check("C++ typed execute with the plan's types runs and is right", [&] {
      p.plan.execute(1.0, p.a_local.data(), p.b_local.data(), 0.0, p.c_local.data(), p.bias_local.data());
      // Every element of C = sum_k 1 * 2 + 0.5 = 8.5 (K = 4).
      const int64_t cols = p.c.local_cols(), ld = p.c.ld();
      for (int64_t j = 0; j < cols; ++j)
        for (int64_t i = 0; i < 9; ++i)
          if (p.c_local[static_cast<size_t>(i + j * ld)] != 8.5) return false;
      return true;
    });

    check("C++ typed execute of FP8 operands with their scales", [&] {
      weave::Grid g(MPI_COMM_WORLD);
      weave::Matrix a8(g, weave::block_rows(2 * g_size, 3, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_ROW_WISE));
      weave::Matrix b8(g, weave::block_cols(3, g_size, WEAVE_FLOAT8_E4M3).scale_mode(WEAVE_SCALE_TENSOR));
      weave::Matrix c32(g, weave::block_cols(2 * g_size, g_size, WEAVE_FLOAT32));
      weave::Plan plan(g, weave::PlanDesc(WEAVE_AG_GEMM, a8, b8, c32));
      const weave::float8_e4m3 one{0x38}, two{0x40};
      std::vector<weave::float8_e4m3> a_local(static_cast<size_t>(a8.local_elements()), one);
      std::vector<weave::float8_e4m3> b_local(static_cast<size_t>(b8.local_elements()), two);
      std::vector<float> c_local(static_cast<size_t>(c32.local_elements()), -1.0f);
      std::vector<float> a_scale(2, 0.25f), b_scale(1, 4.0f);
      weave::Scales scales;
      scales.a = a_scale.data();
      scales.b = b_scale.data();
      plan.execute(1.0, a_local.data(), b_local.data(), 0.0, c_local.data(), scales);
      // Every element: 3 x (1 x 0.25) x (2 x 4) = 6.
      for (float v : c_local)
        if (v != 6.0f) return false;
      // An e5m2 pointer on the e4m3 plan.
      std::vector<weave::float8_e5m2> wrong(a_local.size());
      try {
        plan.execute(1.0, wrong.data(), b_local.data(), 0.0, c_local.data(), scales);
      } catch (const weave::Error& e) {
        return e.status() == WEAVE_ERROR_UNSUPPORTED_TYPE && std::string(e.what()).find("e5m2") != std::string::npos;
      }
      return false;
    });
  }
  if (g_rank == 0) std::printf("%s: %d checks failed on %d ranks\n", g_failed ? "FAILED" : "PASSED", g_failed, g_size);
  MPI_Finalize();
  return g_failed ? 1 : 0;
}
