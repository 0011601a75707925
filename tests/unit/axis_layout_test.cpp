// weave::internal::AxisLayout and numroc against a brute-force reading of
// ScaLAPACK's block-cyclic layout: deal every index of the parent layout
// round the processes block by block, give each process its indices in
// order, then cut out the matrix's range [start, start + extent). Also the
// textbook numroc values from ScaLAPACK's documentation.
#include <gtest/gtest.h>

#include <vector>

#include "core/axis_layout.hpp"
#include "core/split.hpp"

namespace weave::internal {
namespace {

struct Dealt {
  std::vector<int> owner;                // per index of the matrix
  std::vector<int64_t> local;            // its position in the owner's local array
  std::vector<int64_t> count, begin;     // per process
};

// Index by index, as a reader of the ScaLAPACK user guide would.
Dealt deal(int64_t extent, int64_t block, int source, int procs, int64_t start) {
  Dealt d;
  d.count.assign(static_cast<size_t>(procs), 0);
  d.begin.assign(static_cast<size_t>(procs), 0);
  std::vector<int64_t> next(static_cast<size_t>(procs), 0);
  for (int64_t G = 0; G < start + extent; ++G) {
    const int p = static_cast<int>((source + G / block) % procs);
    const int64_t l = next[static_cast<size_t>(p)]++;
    if (G < start) {
      d.begin[static_cast<size_t>(p)] = l + 1;
      continue;
    }
    d.owner.push_back(p);
    d.local.push_back(l);
    d.count[static_cast<size_t>(p)]++;
  }
  return d;
}

TEST(Numroc, TextbookValues) {
  // N = 10, NB = 3 over 3 processes from 0: blocks 0 1 2 on p0 p1 p2, block 3 (one index) on p0.
  EXPECT_EQ(numroc(10, 3, 0, 0, 3), 4);
  EXPECT_EQ(numroc(10, 3, 1, 0, 3), 3);
  EXPECT_EQ(numroc(10, 3, 2, 0, 3), 3);
  // From source 1: p1 gets blocks 0 and 3.
  EXPECT_EQ(numroc(10, 3, 1, 1, 3), 4);
  EXPECT_EQ(numroc(10, 3, 0, 1, 3), 3);
  EXPECT_EQ(numroc(0, 3, 0, 0, 3), 0);
  EXPECT_EQ(numroc(10, 3, 2, -1, 3), 10);  // replicated
  EXPECT_EQ(numroc(10, 100, 0, 0, 2), 10);
  EXPECT_EQ(numroc(10, 100, 1, 0, 2), 0);
}

TEST(AxisLayout, CyclicMatchesDealingIndexByIndex) {
  for (int procs : {1, 2, 3, 4})
    for (int64_t block : {1, 2, 3, 7, 32})
      for (int source = 0; source < procs; ++source)
        for (int64_t start : {0, 1, 5, 33})
          for (int64_t extent : {0, 1, 2, 13, 37, 70}) {
            const AxisLayout axis = AxisLayout::cyclic(extent, block, source, procs, start);
            const Dealt d = deal(extent, block, source, procs, start);
            SCOPED_TRACE(axis.describe() + " extent " + std::to_string(extent));
            int64_t total = 0;
            for (int p = 0; p < procs; ++p) {
              EXPECT_EQ(axis.count(p), d.count[static_cast<size_t>(p)]);
              EXPECT_EQ(axis.local_begin(p), d.begin[static_cast<size_t>(p)]);
              total += axis.count(p);
            }
            EXPECT_EQ(total, extent);
            for (int64_t g = 0; g < extent; ++g) {
              const int p = d.owner[static_cast<size_t>(g)];
              const int64_t l = d.local[static_cast<size_t>(g)];
              EXPECT_EQ(axis.owner(g), p);
              EXPECT_EQ(axis.local_index(g), l);
              EXPECT_EQ(axis.global_index(p, l), g);
            }
            // Segments cover [0, extent) in order, each one process's
            // consecutive local positions.
            int64_t next = 0;
            for (const AxisLayout::Segment& s : axis.segments()) {
              EXPECT_EQ(s.global0, next);
              EXPECT_GT(s.length, 0);
              for (int64_t t = 0; t < s.length; ++t) {
                EXPECT_EQ(d.owner[static_cast<size_t>(s.global0 + t)], s.owner);
                EXPECT_EQ(d.local[static_cast<size_t>(s.global0 + t)], s.local0 + t);
              }
              next = s.global0 + s.length;
            }
            EXPECT_EQ(next, extent);
          }
}

TEST(AxisLayout, OneProcessHoldsEverythingInOneSegment) {
  const AxisLayout axis = AxisLayout::cyclic(37, 4, 0, 1, 6);
  ASSERT_EQ(axis.segments().size(), 1u);
  EXPECT_EQ(axis.local_begin(0), 6);
  EXPECT_EQ(axis.local_end(0), 43);
}

TEST(AxisLayout, CountsAndReplicated) {
  const AxisLayout counts = AxisLayout::counts(Split::from_counts({3, 0, 4}, 7, "counts"));
  EXPECT_EQ(counts.count(1), 0);
  EXPECT_EQ(counts.owner(3), 2);
  EXPECT_EQ(counts.local_index(5), 2);
  EXPECT_EQ(counts.global_index(2, 1), 4);
  EXPECT_EQ(counts.segments().size(), 2u);
  const AxisLayout replicated = AxisLayout::replicated(7, 3);
  EXPECT_EQ(replicated.count(2), 7);
  EXPECT_EQ(replicated.owner(4, 2), 2);
  EXPECT_EQ(replicated.local_index(4), 4);
}

TEST(AxisLayout, ReplicatedSubmatrixStartsInsideEveryLocalArray) {
  // Indices [3, 10) of a dimension every process holds (a source of -1
  // with row_start 3): at local positions 3..9 everywhere.
  const AxisLayout sub = AxisLayout::replicated(7, 2, 4, 3);
  for (int p = 0; p < 2; ++p) {
    EXPECT_EQ(sub.count(p), 7);
    EXPECT_EQ(sub.local_begin(p), 3);
    EXPECT_EQ(sub.local_end(p), 10);
    EXPECT_EQ(sub.global_index(p, 5), 2);
  }
  EXPECT_EQ(sub.local_index(2), 5);
  ASSERT_EQ(sub.segments().size(), 1u);
  EXPECT_EQ(sub.segments()[0].local0, 3);
  EXPECT_EQ(sub.segments()[0].owner, -1);
  const AxisLayout whole = AxisLayout::replicated(7, 2);
  EXPECT_FALSE(sub.same_placement(whole));  // other local positions
  EXPECT_TRUE(sub.aligned_with(whole));     // the same counted from each start
}

TEST(AxisLayout, SamePlacementSeesOneBlockPerProcessAsCyclic) {
  // 12 indices in blocks of 4 over 3 processes from 0 is one block each.
  const AxisLayout cyclic = AxisLayout::cyclic(12, 4, 0, 3);
  const AxisLayout counts = AxisLayout::counts(Split::from_counts({4, 4, 4}, 12, "counts"));
  EXPECT_TRUE(cyclic.same_placement(counts));
  EXPECT_FALSE(AxisLayout::cyclic(12, 4, 1, 3).same_placement(counts));
  EXPECT_FALSE(AxisLayout::cyclic(12, 2, 0, 3).same_placement(counts));
  EXPECT_FALSE(cyclic.same_placement(AxisLayout::replicated(12, 3)));
}

TEST(AxisLayout, AlignedCountsLocalPositionsFromEachStart) {
  // Rows 4.. of a layout in blocks of 4 over 2 processes from 0, and rows
  // 0.. of one from 1: the same processes in the same order, at local
  // positions 4 apart on process 1.
  const AxisLayout sub = AxisLayout::cyclic(10, 4, 0, 2, 4);
  const AxisLayout whole = AxisLayout::cyclic(10, 4, 1, 2, 0);
  EXPECT_TRUE(sub.aligned_with(whole));
  EXPECT_FALSE(sub.same_placement(whole));
  EXPECT_FALSE(sub.aligned_with(AxisLayout::cyclic(10, 4, 0, 2, 0)));
  EXPECT_FALSE(AxisLayout::cyclic(10, 4, 0, 2, 2).aligned_with(AxisLayout::cyclic(10, 4, 0, 2, 0)));
}

}  // namespace
}  // namespace weave::internal
