// Choosing a cuBLASLt algorithm by timing, at plan creation
// (WEAVE_GEMM_TUNING=on): cuBLASLt's heuristic ranks its kernels by a model
// of the device, and its first answer need not be the fastest. The
// candidates it returns are run, each a few times, on scratch buffers of
// the GEMM's shape; the fastest is kept. (Measured on 2 H100s,
// doc/performance.md: row-wise FP8 GEMMs get a single candidate, so there
// is nothing to choose; bf16 GEMMs get eight, and tuned plans were within
// the run-to-run noise of untuned ones.) The answer is remembered per
// process for the GEMM's full description (device, shape, leading
// dimensions, types, transposes, scale modes, epilogue, SM target,
// alignments), so every plan of a process that has a GEMM of that
// description gets the same algorithm, and a GEMM is timed once.
//
// Results differ between algorithms in the last bits (they sum in other
// orders), so with tuning a plan is bitwise reproducible run to run but
// may differ from an untuned plan, or from a plan of another process that
// timed the candidates the other way round.
#pragma once

#include <cublasLt.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weave::internal::cuda {

// Sizes of the scratch buffers one matmul reads and writes, in bytes.
struct TuningBuffers {
  std::size_t left = 0, right = 0, out = 0;
  std::size_t left_scales = 0, right_scales = 0;  // 0: not scaled
  std::size_t bias = 0;                           // 0: no bias in the epilogue
  std::size_t workspace = 0;
};

// What one tuning did, for describe.
struct TuningOutcome {
  bool timed = false;        // candidates were run now (false: remembered, or not tuned)
  bool remembered = false;   // the answer came from an earlier plan of this process
  int candidates = 0;        // heuristic answers considered
  int chosen = 0;            // index of the chosen one among them (0: the heuristic's first)
  double first_ms = 0, chosen_ms = 0;  // timings (when timed)
  std::string why_not;       // why nothing was timed, if so
};

// Picks among `candidates` (cuBLASLt's heuristic answers, best first) for
// the matmul `desc` of `layouts` (left, right, out), remembering the
// answer under `key`. Returns the index of the chosen candidate. Never
// fails: where a scratch buffer cannot be had, or a candidate does not
// run, it keeps the heuristic's order. `double_scalars`: alpha and beta
// are doubles (else floats).
int choose_by_timing(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                     const std::array<cublasLtMatrixLayout_t, 3>& layouts,
                     const std::vector<cublasLtMatmulHeuristicResult_t>& candidates, const TuningBuffers& buffers,
                     bool double_scalars, const std::string& key, TuningOutcome* outcome);

}  // namespace weave::internal::cuda
