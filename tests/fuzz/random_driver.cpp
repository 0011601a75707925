// The plan fuzz case (plan_fuzz_case.hpp) without libFuzzer: a seeded
// driver that any compiler builds, run by ctest and under the sanitizers
// at one and more ranks (every rank makes the same inputs, so the C API's
// collective calls line up).
//
// Usage: weave_fuzz_driver [--runs N] [--seed S] [--max-length L]
//                          [--first I] [--last-input PATH] [--verbose] [PATH...]
// Runs every input in PATH (a file, or each file of a directory in name
// order), then N generated inputs (default 1000): input i of seed S is,
// half of the time, a corpus input with a few bytes changed, else up to L
// (default 160) pseudo-random bytes. --first I starts at input I, so
// `--first I --runs 1` replays one. --last-input PATH writes each input to
// PATH.<rank> before running it: after a crash that file reproduces it (with
// this driver or the libFuzzer target). Prints how far the inputs got (grids,
// matrices, plans created, plans executed). A violated invariant or a
// sanitizer report aborts with a message; otherwise the exit status is 0.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "plan_fuzz_case.hpp"

namespace {

using Bytes = std::vector<uint8_t>;

// splitmix64: a stream of 64-bit values per (seed, input).
struct Generator {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
};

Bytes read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void add_inputs(const std::filesystem::path& path, std::vector<std::pair<std::string, Bytes>>& inputs) {
  if (!std::filesystem::is_directory(path)) {
    inputs.emplace_back(path.string(), read_file(path));
    return;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(path))
    if (entry.is_regular_file()) files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) inputs.emplace_back(file.string(), read_file(file));
}

Bytes generate(uint64_t seed, uint64_t index, std::size_t max_length,
               const std::vector<std::pair<std::string, Bytes>>& corpus) {
  Generator g{seed * 0x100000001B3ull ^ index};
  Bytes bytes;
  if (!corpus.empty() && g.below(2) == 0) {
    bytes = corpus[g.below(corpus.size())].second;
    const uint64_t changes = 1 + g.below(4);
    for (uint64_t c = 0; c < changes; ++c) {
      if (!bytes.empty() && g.below(8) != 0)
        bytes[g.below(bytes.size())] = static_cast<uint8_t>(g.next());
      else if (g.below(2) == 0)
        bytes.push_back(static_cast<uint8_t>(g.next()));
      else if (!bytes.empty())
        bytes.resize(g.below(bytes.size()));
    }
    return bytes;
  }
  bytes.resize(g.below(max_length + 1));
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(g.next());
  return bytes;
}

struct Counts {
  long inputs = 0, grids = 0, matrices = 0, plans = 0, executed = 0;
  void add(const weave_fuzz::CaseOutcome& o) {
    ++inputs;
    grids += o.grid;
    matrices += o.matrices;
    plans += o.plan;
    executed += o.executed;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  uint64_t runs = 1000, seed = 1, first = 0;
  std::size_t max_length = 160;
  std::string last_input;
  bool verbose = false;
  std::vector<std::pair<std::string, Bytes>> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "weave_fuzz_driver: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (arg == "--runs")
      runs = std::stoull(value());
    else if (arg == "--seed")
      seed = std::stoull(value());
    else if (arg == "--max-length")
      max_length = std::stoull(value());
    else if (arg == "--first")
      first = std::stoull(value());
    else if (arg == "--last-input")
      last_input = value() + "." + std::to_string(rank);
    else if (arg == "--verbose")
      verbose = true;
    else
      add_inputs(arg, corpus);
  }

  auto run = [&](const std::string& name, const Bytes& bytes, Counts& counts) {
    if (!last_input.empty()) std::ofstream(last_input, std::ios::binary).write(
        reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    const weave_fuzz::CaseOutcome o = weave_fuzz::run_case(bytes.data(), bytes.size());
    counts.add(o);
    if (verbose && rank == 0)
      std::printf("%s: grid %d, matrices %d, plan %d, executed %d\n", name.c_str(), o.grid, o.matrices, o.plan,
                  o.executed);
  };
  Counts from_corpus, generated;
  for (const auto& [name, bytes] : corpus) run(name, bytes, from_corpus);
  for (uint64_t i = first; i < first + runs; ++i)
    run("input " + std::to_string(i), generate(seed, i, max_length, corpus), generated);

  if (rank == 0) {
    auto print = [](const char* what, const Counts& c) {
      std::printf("weave_fuzz_driver: %s: %ld inputs, %ld grids, %ld matrices and %ld plans created, "
                  "%ld plans executed\n", what, c.inputs, c.grids, c.matrices, c.plans, c.executed);
    };
    std::printf("weave_fuzz_driver: %d rank(s), seed %llu, inputs %llu to %llu\n", size,
                static_cast<unsigned long long>(seed), static_cast<unsigned long long>(first),
                static_cast<unsigned long long>(first + runs - (runs ? 1 : 0)));
    print("corpus", from_corpus);
    print("generated", generated);
    std::printf("weave_fuzz_driver: no invariant violated\n");
  }
  MPI_Finalize();
  return 0;
}
