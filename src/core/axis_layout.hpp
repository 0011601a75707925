// How one dimension of a distributed matrix (its rows, or its columns) lies
// along one dimension of the process grid (its rows, or its columns):
//
//   cyclic      ScaLAPACK's block-cyclic layout: blocks of `block` indices,
//               the first one on process `source`, dealt round the
//               processes; each process keeps its blocks one after another
//               (numroc counts them). A matrix may start `start` indices into
//               such a layout (a submatrix, ScaLAPACK's IA - 1): its first
//               block is then shorter, and each process's part begins where
//               the indices before `start` end in its local array;
//   counts      one block per process, of any sizes (WEAVE_DIST_BLOCK_2D);
//   replicated  every process holds every index (a source of -1 in
//               ScaLAPACK/PBLAS terms, or WEAVE_DIST_REPLICATED); a
//               submatrix starts `start` indices into every local array.
//
// Plans reason over these alone: which process holds an index, where in
// its local array, and the runs of indices that one process holds at
// consecutive local positions. Every quantity fits int64_t: nothing here
// multiplies a caller's sizes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/split.hpp"

namespace weave::internal {

// ScaLAPACK's NUMROC: how many of n indices, cut into blocks of nb and
// dealt round nprocs processes from isrcproc, process iproc holds.
// isrcproc -1: all n (replicated).
int64_t numroc(int64_t n, int64_t nb, int iproc, int isrcproc, int nprocs);

class AxisLayout {
 public:
  enum class Kind { Cyclic, Counts, Replicated };

  // `extent` indices starting `start` into a block-cyclic layout of blocks
  // of `block` over `procs` processes whose first block is on `source`.
  // The caller has checked block > 0, 0 <= source < procs, and that
  // start + extent fits int64_t.
  static AxisLayout cyclic(int64_t extent, int64_t block, int source, int procs, int64_t start = 0);
  static AxisLayout counts(const Split& split);
  // `block` is kept for messages and agreement checks only; the indices
  // lie at local positions [start, start + extent) on every process.
  static AxisLayout replicated(int64_t extent, int procs, int64_t block = 1, int64_t start = 0);

  Kind kind() const { return kind_; }
  bool is_replicated() const { return kind_ == Kind::Replicated; }
  int64_t extent() const { return extent_; }
  int procs() const { return procs_; }
  int64_t block() const { return block_; }
  int source() const { return source_; }
  int64_t start() const { return start_; }

  // Indices process p holds.
  int64_t count(int p) const;
  // Position in p's local array of the first of them (0 unless the matrix
  // is a submatrix: starts inside a block-cyclic or replicated layout).
  // p's local array holds at least local_end(p) elements along this axis.
  int64_t local_begin(int p) const;
  int64_t local_end(int p) const { return local_begin(p) + count(p); }
  // The process holding index g (0 <= g < extent); for a replicated axis
  // every process does: `process` is returned.
  int owner(int64_t g, int process = 0) const;
  // g's position in its holder's local array.
  int64_t local_index(int64_t g) const;
  // The index held by process p at local position l (local_begin(p) <= l < local_end(p)).
  int64_t global_index(int p, int64_t l) const;

  // A run of indices [global0, global0 + length) that process `owner` holds
  // at local positions [local0, local0 + length); owner -1 on a replicated
  // axis of several processes (every process, at local0 = start + global0).
  struct Segment {
    int64_t global0 = 0, length = 0;
    int owner = 0;
    int64_t local0 = 0;
  };
  // The maximal such runs, in increasing global order, covering [0, extent).
  std::vector<Segment> segments() const;

  // "block-cyclic (block 32 from process 1 of 2)", for messages.
  std::string describe() const;

  // Whether two axes put every index on the same process at the same local
  // position (how they are described may differ: one block per process is
  // also a block-cyclic layout).
  bool same_placement(const AxisLayout& other) const;
  // Whether they put every index on the same process, in the same order
  // and without gaps relative to each other: the same position counted
  // from each process's local_begin (two submatrices of differently offset
  // arrays can be aligned).
  bool aligned_with(const AxisLayout& other) const;

 private:
  Kind kind_ = Kind::Replicated;
  int64_t extent_ = 0;
  int procs_ = 1;
  int64_t block_ = 1;
  int source_ = 0;
  int64_t start_ = 0;
  Split split_;  // counts
};

}  // namespace weave::internal
