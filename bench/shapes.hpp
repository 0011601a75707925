// The benchmark's problem shapes (global M x K x N), their presets and process
// grids, shared by weave-bench and the peer benchmarks so that they measure
// the same shapes.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

struct Shape {
  int64_t m = 0, k = 0, n = 0;
  bool uneven = false;  // rank shard sizes differing by about 10%
  std::string label() const {
    std::ostringstream out;
    out << m << "x" << k << "x" << n << (uneven ? " uneven" : "");
    return out.str();
  }
};

// "MxKxN", optionally followed by ":uneven" or " uneven".
inline Shape parse_shape(const std::string& text) {
  Shape s;
  char x1 = 0, x2 = 0;
  std::istringstream in(text);
  in >> s.m >> x1 >> s.k >> x2 >> s.n;
  if (!in || x1 != 'x' || x2 != 'x') throw std::runtime_error("shape must look like MxKxN, got " + text);
  std::string rest;
  in >> rest;
  s.uneven = rest == "uneven" || text.find(":uneven") != std::string::npos;
  return s;
}

inline std::vector<Shape> preset_shapes(const std::string& preset) {
  if (preset == "tp")  // tensor-parallel layers (global M x K x N)
    return {parse_shape("4096x8192x8192"), parse_shape("8192x8192x8192"), parse_shape("16384x8192x28672"),
            parse_shape("16384x16384x16384"), parse_shape("8192x8192x8192:uneven"), parse_shape("1024x8192x8192")};
  if (preset == "host")  // shapes where communication and GEMM take similar time on a CPU node
    return {parse_shape("4096x256x1024"), parse_shape("8192x128x2048"), parse_shape("4096x256x1024:uneven")};
  if (preset == "small") return {parse_shape("512x256x384"), parse_shape("512x256x384:uneven")};
  // WEAVE_GEMM over a 2-D grid (--ops gemm): square, and tall-skinny (a tall
  // A times a small square B).
  if (preset == "gemm-host") return {parse_shape("2048x2048x2048"), parse_shape("16384x512x512")};
  if (preset == "gemm-gpu")
    return {parse_shape("8192x8192x8192"), parse_shape("16384x16384x16384"), parse_shape("131072x4096x4096")};
  throw std::runtime_error("unknown preset " + preset + " (tp, host, small, gemm-host, gemm-gpu)");
}

// A process grid "2x3" -> {2, 3}.
inline std::pair<int, int> parse_grid(const std::string& text) {
  int pr = 0, pc = 0;
  char x = 0;
  std::istringstream in(text);
  in >> pr >> x >> pc;
  if (!in || x != 'x' || pr < 1 || pc < 1 || in.peek() != std::char_traits<char>::eof())
    throw std::runtime_error("a process grid looks like 2x3, got " + text);
  return {pr, pc};
}

// The grid closest to square over `ranks` (P_r <= P_c).
inline std::pair<int, int> squarest_grid(int ranks) {
  int pr = 1;
  for (int d = 1; d * d <= ranks; ++d)
    if (ranks % d == 0) pr = d;
  return {pr, ranks / pr};
}

}  // namespace bench
