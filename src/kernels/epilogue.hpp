// The element-wise kernel of every backend, written once:
//   dst(i,j) = src_scale * (src(i,j) + more[0](i,j) + ...) + dst_scale * dst(i,j) + bias(j)
// (the sum of the sources conjugated first when conjugate_src: complex
// types, a copy of op(X) with op C)
// where bias(j) = bias[j * bias_stride]: a 1 x N bias stored column-major
// with ld > 1 has its entries ld apart.
// It finishes reductions (beta * C and bias enter here, once), adds bias
// after a GEMM, packs and unpacks chunks, and converts between types and
// storage orders. One call per element index, in dst's storage order so
// neighbouring indices touch neighbouring dst elements.
#pragma once

#include <cstdint>

#include "kernels/numeric.hpp"

namespace weave::internal::kernels {

// Sources an element-wise step may sum besides src: the direct algorithm
// adds every rank's product in one pass (schedules split larger sums).
constexpr int kMaxMoreSources = 7;

template <class Dst, class Src>
struct EpilogueFunctor {
  using Acc = typename Arithmetic<Dst>::type;

  Dst* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  const Src* src = nullptr;  // null: no src term
  int64_t src_ld = 1;
  bool src_row_major = false;
  // Further sources laid out like src (same ld and order), summed with it in Acc.
  const Src* more[kMaxMoreSources] = {};
  int more_count = 0;
  const Dst* bias = nullptr;  // null: no bias; one entry per column, bias_stride apart
  int64_t bias_stride = 1;
  Acc src_scale = 1;
  Acc dst_scale = 0;  // dst is not read when zero (it may hold NaN)
  bool conjugate_src = false;  // complex types: the sum of the sources conjugated (op C)
  int64_t rows = 0, cols = 0;

  WEAVE_FUNCTION int64_t size() const { return rows * cols; }

  // Extent of dst along its contiguous (minor) and strided (major) dimension.
  WEAVE_FUNCTION int64_t minor_extent() const { return dst_row_major ? cols : rows; }
  WEAVE_FUNCTION int64_t major_extent() const { return dst_row_major ? rows : cols; }

  // One element by flat index in dst's storage order (host launches).
  WEAVE_FUNCTION void operator()(int64_t index) const {
    const int64_t minor = index % minor_extent(), major = index / minor_extent();
    apply(minor, major);
  }

  // One element by its position along dst's minor and major dimension
  // (GPU launches index both directly, without a division per element).
  WEAVE_FUNCTION void apply(int64_t minor, int64_t major) const { store(minor, major, value(minor, major)); }

  // The two halves of apply: GPU launches read several elements before they
  // write any, so the reads are in flight together.
  WEAVE_FUNCTION Acc value(int64_t minor, int64_t major) const {
    const int64_t i = dst_row_major ? major : minor;
    const int64_t j = dst_row_major ? minor : major;
    Acc result = 0;
    if (src) {
      const int64_t at = src_row_major ? i * src_ld + j : i + j * src_ld;
      Acc sum = load_as<Acc>(src[at]);
      // A loop of constant length: a GPU keeps `more` in parameter space
      // (indexing it with a run-time bound would copy it to local memory).
      for (int q = 0; q < kMaxMoreSources; ++q) {
        if (q >= more_count) break;
        sum += load_as<Acc>(more[q][at]);
      }
      if (conjugate_src) sum = conjugate(sum);
      result = src_scale * sum;
    }
    if (dst_scale != Acc(0)) result += dst_scale * load_as<Acc>(dst[dst_index(i, j)]);
    if (bias) result += bias_at(j);
    return result;
  }
  // The bias entry of column j.
  WEAVE_FUNCTION Acc bias_at(int64_t j) const { return load_as<Acc>(bias[j * bias_stride]); }
  WEAVE_FUNCTION void store(int64_t minor, int64_t major, Acc value) const {
    const int64_t i = dst_row_major ? major : minor;
    const int64_t j = dst_row_major ? minor : major;
    dst[dst_index(i, j)] = store_as<Dst>(value);
  }
  WEAVE_FUNCTION int64_t dst_index(int64_t i, int64_t j) const {
    return dst_row_major ? i * dst_ld + j : i + j * dst_ld;
  }
};

}  // namespace weave::internal::kernels
