// weave::internal::Split: balanced and user-given counts, offsets, refinement into
// chunks, and the exact errors for counts that cannot describe a split.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/split.hpp"

namespace weave::internal {
namespace {

using Counts = std::vector<int64_t>;

std::vector<int64_t> offsets(const Split& s) {
  std::vector<int64_t> out;
  for (int p = 0; p < s.parts(); ++p) out.push_back(s.offset(p));
  return out;
}

TEST(Split, BalancedGivesTheRemainderToTheFirstParts) {
  const Split s = Split::balanced(10, 3);
  EXPECT_EQ(s.parts(), 3);
  EXPECT_EQ(s.counts(), (Counts{4, 3, 3}));
  EXPECT_EQ(offsets(s), (Counts{0, 4, 7}));
  EXPECT_EQ(s.total(), 10);
  EXPECT_EQ(s.max_count(), 4);
}

TEST(Split, BalancedWithFewerItemsThanPartsLeavesZeros) {
  const Split s = Split::balanced(2, 5);
  EXPECT_EQ(s.counts(), (Counts{1, 1, 0, 0, 0}));
  EXPECT_EQ(offsets(s), (Counts{0, 1, 2, 2, 2}));
  EXPECT_EQ(Split::balanced(0, 3).counts(), (Counts{0, 0, 0}));
  EXPECT_EQ(Split::balanced(0, 3).max_count(), 0);
}

TEST(Split, WholeIsOnePart) {
  const Split s = Split::whole(17);
  EXPECT_EQ(s.parts(), 1);
  EXPECT_EQ(s.count(0), 17);
  EXPECT_EQ(s.offset(0), 0);
}

TEST(Split, FromCountsKeepsUnevenAndZeroCounts) {
  const Split s = Split::from_counts({0, 5, 0, 2}, 7, "row_counts");
  EXPECT_EQ(s.counts(), (Counts{0, 5, 0, 2}));
  EXPECT_EQ(offsets(s), (Counts{0, 0, 5, 5}));
  EXPECT_EQ(s.total(), 7);
  EXPECT_EQ(s.max_count(), 5);
  EXPECT_EQ(Split::from_counts({0, 0}, 0, "row_counts").total(), 0);
}

TEST(Split, EqualityComparesCounts) {
  EXPECT_EQ(Split::balanced(7, 2), Split::from_counts({4, 3}, 7, "c"));
  EXPECT_NE(Split::balanced(7, 2), Split::from_counts({3, 4}, 7, "c"));
  EXPECT_NE(Split::balanced(6, 2), Split::balanced(6, 3));
}

TEST(Split, NegativeCountIsInvalidCountsNamingTheEntry) {
  try {
    Split::from_counts({3, -1, 5}, 7, "A.row_counts");
    FAIL() << "a negative count was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), WEAVE_ERROR_INVALID_COUNTS);
    const std::string message = e.what();
    EXPECT_NE(message.find("A.row_counts[1]"), std::string::npos) << message;
    EXPECT_NE(message.find("-1"), std::string::npos) << message;
  }
}

TEST(Split, WrongSumIsInvalidCountsWithBothSums) {
  for (const Counts& counts : {Counts{3, 3}, Counts{4, 4}, Counts{}}) {
    try {
      Split::from_counts(counts, 7, "B.col_counts");
      FAIL() << "counts " << format_counts(counts) << " accepted for 7 items";
    } catch (const Error& e) {
      EXPECT_EQ(e.status(), WEAVE_ERROR_INVALID_COUNTS);
      const std::string message = e.what();
      EXPECT_NE(message.find("B.col_counts"), std::string::npos) << message;
      EXPECT_NE(message.find("expected 7"), std::string::npos) << message;
    }
  }
}

TEST(Split, RefineCutsEveryPartIntoBalancedPieces) {
  const Split s = Split::from_counts({5, 0, 2}, 7, "c");
  const Split r = s.refine(2);
  EXPECT_EQ(r.parts(), 6);
  EXPECT_EQ(r.counts(), (Counts{3, 2, 0, 0, 1, 1}));
  EXPECT_EQ(offsets(r), (Counts{0, 3, 5, 5, 5, 6}));
  EXPECT_EQ(r.total(), s.total());
  // Piece j of part p is refined part p * pieces + j and starts inside p.
  const Split r3 = s.refine(3);
  for (int p = 0; p < s.parts(); ++p) {
    int64_t sum = 0;
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(r3.offset(p * 3 + j), s.offset(p) + sum);
      sum += r3.count(p * 3 + j);
    }
    EXPECT_EQ(sum, s.count(p));
  }
  EXPECT_EQ(s.refine(1), s);
}

TEST(Split, OutOfRangePartThrows) {
  const Split s = Split::balanced(4, 2);
  EXPECT_THROW(s.count(2), std::out_of_range);
  EXPECT_THROW(s.offset(-1), std::out_of_range);
}

TEST(Split, BalancedInUnitsCutsOnMultiplesOfTheUnit) {
  // 5 whole units of 16 over 3 parts, the 3 items left over to the last.
  EXPECT_EQ(Split::balanced(83, 3, 16).counts(), (Counts{32, 32, 19}));
  // Fewer units than parts: the last parts are empty but for the rest.
  EXPECT_EQ(Split::balanced(40, 4, 16).counts(), (Counts{16, 16, 0, 8}));
  EXPECT_EQ(Split::balanced(7, 2, 16).counts(), (Counts{0, 7}));
  EXPECT_EQ(Split::balanced(10, 3, 1), Split::balanced(10, 3));
}

TEST(Split, RefineInUnitsCutsEachPartFromItsOwnStart) {
  // Parts 54 and 80: chunk boundaries at multiples of 16 within each part.
  const Split s = Split::from_counts({54, 80}, 134, "c").refine(3, 16);
  EXPECT_EQ(s.counts(), (Counts{16, 16, 22, 32, 32, 16}));
  EXPECT_EQ(offsets(s), (Counts{0, 16, 32, 54, 86, 118}));
}

TEST(Split, FormatCounts) {
  EXPECT_EQ(format_counts({}), "[]");
  EXPECT_EQ(format_counts({1, 0, 22}), "[1,0,22]");
}

}  // namespace
}  // namespace weave::internal
