// Checks of the small MPI test programs: each rank counts what failed and
// says so on stderr; the program agrees on the total at the end.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

namespace weave_test {

class RankChecks {
 public:
  RankChecks() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const { return rank_; }
  int size() const { return size_; }
  void expect(bool condition, const std::string& what) {
    if (condition) return;
    ++failures_;
    std::fprintf(stderr, "rank %d: FAIL %s\n", rank_, what.c_str());
  }
  // Collective: the failures of every rank; rank 0 prints "PASSED: <what>"
  // or "FAILED: <what>". Returns the program's exit status.
  int finish(const std::string& what) const {
    int failures = 0;
    MPI_Allreduce(&failures_, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank_ == 0) std::printf("%s: %s\n", failures ? "FAILED" : "PASSED", what.c_str());
    return failures ? 1 : 0;
  }

 private:
  int rank_ = 0, size_ = 1, failures_ = 0;
};

}  // namespace weave_test
