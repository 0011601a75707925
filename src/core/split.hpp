// A split of n items (rows, columns) over `parts` owners: counts and offsets.
// Counts may be uneven and may be zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace weave::internal {

class Split {
 public:
  Split() = default;
  // n items over `parts` owners, the first n % parts owners one item more.
  // With a `unit` above 1, whole units are balanced instead and every part
  // but the last begins and ends on a multiple of `unit` (the last takes
  // what is left over).
  static Split balanced(int64_t n, int parts, int64_t unit = 1);
  // Validates: `counts.size() == parts`, no negative count, sum == n. `what`
  // names the argument in the error message.
  static Split from_counts(const std::vector<int64_t>& counts, int64_t n, const std::string& what);
  // The whole range owned by one part (replicated data).
  static Split whole(int64_t n) { return balanced(n, 1); }

  int parts() const { return static_cast<int>(counts_.size()); }
  int64_t total() const { return total_; }
  int64_t count(int part) const { return counts_.at(part); }
  int64_t offset(int part) const { return offsets_.at(part); }
  const std::vector<int64_t>& counts() const { return counts_; }
  int64_t max_count() const;

  // Each part cut into `pieces` balanced sub-ranges: piece j of part p is
  // refined part p * pieces + j. With a `unit`, the cuts within a part fall
  // on multiples of `unit` counted from the part's start (balanced above).
  Split refine(int pieces, int64_t unit = 1) const;

  bool operator==(const Split& other) const { return counts_ == other.counts_; }
  bool operator!=(const Split& other) const { return !(*this == other); }

 private:
  explicit Split(std::vector<int64_t> counts);
  std::vector<int64_t> counts_;
  std::vector<int64_t> offsets_;
  int64_t total_ = 0;
};

std::string format_counts(const std::vector<int64_t>& counts);

}  // namespace weave::internal
