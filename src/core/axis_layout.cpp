#include "core/axis_layout.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace weave::internal {

int64_t numroc(int64_t n, int64_t nb, int iproc, int isrcproc, int nprocs) {
  if (isrcproc < 0 || nprocs == 1) return n;
  // Distance of iproc from the process holding the first block.
  const int distance = (nprocs + iproc - isrcproc) % nprocs;
  const int64_t blocks = n / nb;
  int64_t count = blocks / nprocs * nb;
  const int64_t extra_blocks = blocks % nprocs;
  if (distance < extra_blocks)
    count += nb;
  else if (distance == extra_blocks)
    count += n % nb;
  return count;
}

AxisLayout AxisLayout::cyclic(int64_t extent, int64_t block, int source, int procs, int64_t start) {
  AxisLayout a;
  a.kind_ = Kind::Cyclic;
  a.extent_ = extent;
  a.block_ = block;
  a.source_ = source;
  a.procs_ = procs;
  a.start_ = start;
  return a;
}

AxisLayout AxisLayout::counts(const Split& split) {
  AxisLayout a;
  a.kind_ = Kind::Counts;
  a.extent_ = split.total();
  a.procs_ = split.parts();
  a.split_ = split;
  return a;
}

AxisLayout AxisLayout::replicated(int64_t extent, int procs, int64_t block, int64_t start) {
  AxisLayout a;
  a.kind_ = Kind::Replicated;
  a.extent_ = extent;
  a.procs_ = procs;
  a.block_ = block;
  a.start_ = start;
  return a;
}

int64_t AxisLayout::count(int p) const {
  switch (kind_) {
    case Kind::Cyclic:
      return numroc(start_ + extent_, block_, p, source_, procs_) - numroc(start_, block_, p, source_, procs_);
    case Kind::Counts: return split_.count(p);
    case Kind::Replicated: return extent_;
  }
  return 0;
}

int64_t AxisLayout::local_begin(int p) const {
  switch (kind_) {
    case Kind::Cyclic: return numroc(start_, block_, p, source_, procs_);
    case Kind::Counts: return 0;
    case Kind::Replicated: return start_;
  }
  return 0;
}

int AxisLayout::owner(int64_t g, int process) const {
  switch (kind_) {
    case Kind::Cyclic: return static_cast<int>((source_ + (start_ + g) / block_ % procs_) % procs_);
    case Kind::Counts: {
      // The last part starting at or before g that is not empty.
      const std::vector<int64_t>& counts = split_.counts();
      int p = 0;
      while (p + 1 < split_.parts() && split_.offset(p + 1) <= g) ++p;
      while (counts[static_cast<std::size_t>(p)] == 0 && p > 0) --p;
      return p;
    }
    case Kind::Replicated: return process;
  }
  return 0;
}

int64_t AxisLayout::local_index(int64_t g) const {
  switch (kind_) {
    case Kind::Cyclic: {
      const int64_t G = start_ + g;
      return G / block_ / procs_ * block_ + G % block_;
    }
    case Kind::Counts: return g - split_.offset(owner(g));
    case Kind::Replicated: return start_ + g;
  }
  return 0;
}

int64_t AxisLayout::global_index(int p, int64_t l) const {
  switch (kind_) {
    case Kind::Cyclic: {
      // Local block l / block is the (l / block)-th block of p: global block
      // (l / block) * procs + distance of p from the source.
      const int distance = (procs_ + p - source_) % procs_;
      const int64_t G = (l / block_ * procs_ + distance) * block_ + l % block_;
      return G - start_;
    }
    case Kind::Counts: return split_.offset(p) + l;
    case Kind::Replicated: return l - start_;
  }
  return 0;
}

std::vector<AxisLayout::Segment> AxisLayout::segments() const {
  std::vector<Segment> out;
  if (extent_ == 0) return out;
  switch (kind_) {
    case Kind::Replicated:
      // Every process; over one process that is process 0.
      out.push_back({0, extent_, procs_ == 1 ? 0 : -1, start_});
      break;
    case Kind::Counts:
      for (int p = 0; p < procs_; ++p)
        if (split_.count(p) > 0) out.push_back({split_.offset(p), split_.count(p), p, 0});
      break;
    case Kind::Cyclic: {
      // Block by block; with one process every block follows the last.
      int64_t g = 0;
      while (g < extent_) {
        const int64_t G = start_ + g;
        const int64_t length = std::min(block_ - G % block_, extent_ - g);
        const int holder = owner(g);
        const int64_t local = local_index(g);
        if (!out.empty() && out.back().owner == holder && out.back().local0 + out.back().length == local)
          out.back().length += length;
        else
          out.push_back({g, length, holder, local});
        g += length;
      }
      break;
    }
  }
  return out;
}

std::string AxisLayout::describe() const {
  switch (kind_) {
    case Kind::Cyclic:
      return str("block-cyclic (blocks of ", block_, " from process ", source_, " of ", procs_,
                 start_ ? str(", starting at ", start_) : std::string(), ")");
    case Kind::Counts: return str("one block per process ", format_counts(split_.counts()));
    case Kind::Replicated:
      return str("replicated over ", procs_, " processes", start_ ? str(", starting at ", start_) : std::string());
  }
  return "?";
}

namespace {
// Segment by segment; `relative` counts local positions from local_begin.
bool same_segments(const AxisLayout& x, const AxisLayout& y, bool relative) {
  if (x.extent() != y.extent() || x.procs() != y.procs()) return false;
  if (x.procs() > 1 && (x.is_replicated() || y.is_replicated()))
    return x.is_replicated() && y.is_replicated() && (relative || x.start() == y.start());
  const std::vector<AxisLayout::Segment> mine = x.segments(), theirs = y.segments();
  if (mine.size() != theirs.size()) return false;
  for (std::size_t s = 0; s < mine.size(); ++s) {
    const AxisLayout::Segment &a = mine[s], &b = theirs[s];
    const int64_t a_local = a.local0 - (relative ? x.local_begin(a.owner) : 0);
    const int64_t b_local = b.local0 - (relative ? y.local_begin(b.owner) : 0);
    if (a.global0 != b.global0 || a.length != b.length || a.owner != b.owner || a_local != b_local) return false;
  }
  return true;
}
}  // namespace

bool AxisLayout::same_placement(const AxisLayout& other) const { return same_segments(*this, other, false); }

bool AxisLayout::aligned_with(const AxisLayout& other) const { return same_segments(*this, other, true); }

}  // namespace weave::internal
