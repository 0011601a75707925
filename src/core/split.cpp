#include "core/split.hpp"

#include <algorithm>

#include "core/checked.hpp"
#include "core/error.hpp"

namespace weave::internal {

Split::Split(std::vector<int64_t> counts) : counts_(std::move(counts)) {
  offsets_.resize(counts_.size());
  int64_t running = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    offsets_[i] = running;
    running = checked_add(running, counts_[i], "the offset of part ", i + 1, " of a split");
  }
  total_ = running;
}

Split Split::balanced(int64_t n, int parts, int64_t unit) {
  if (parts < 1 || unit < 1) fail(WEAVE_ERROR_INTERNAL, "a split of ", n, " into ", parts, " parts of unit ", unit);
  std::vector<int64_t> counts(parts);
  const int64_t units = n / unit;
  for (int i = 0; i < parts; ++i) counts[i] = (units / parts + (i < units % parts ? 1 : 0)) * unit;
  counts[parts - 1] += n % unit;
  return Split(std::move(counts));
}

Split Split::from_counts(const std::vector<int64_t>& counts, int64_t n, const std::string& what) {
  int64_t sum = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 0)
      fail(WEAVE_ERROR_INVALID_COUNTS, what, "[", i, "] = ", counts[i], " is negative");
    sum = checked_add(sum, counts[i], "the sum of ", what, "[0..", i, "]");
  }
  if (sum != n)
    fail(WEAVE_ERROR_INVALID_COUNTS, what, " = ", format_counts(counts), " sums to ", sum,
         ", expected ", n);
  return Split(counts);
}

int64_t Split::max_count() const {
  return counts_.empty() ? 0 : *std::max_element(counts_.begin(), counts_.end());
}

Split Split::refine(int pieces, int64_t unit) const {
  if (pieces < 1) fail(WEAVE_ERROR_INTERNAL, "a split refined into ", pieces, " pieces");
  std::vector<int64_t> refined;
  refined.reserve(counts_.size() * static_cast<std::size_t>(pieces));
  for (int64_t c : counts_) {
    Split sub = balanced(c, pieces, unit);
    refined.insert(refined.end(), sub.counts_.begin(), sub.counts_.end());
  }
  return Split(std::move(refined));
}

std::string format_counts(const std::vector<int64_t>& counts) {
  std::string text = "[";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (i) text += ",";
    text += std::to_string(counts[i]);
  }
  return text + "]";
}

}  // namespace weave::internal
