// The widest word a plain copy can move at once. The copy kernel moves one
// word per thread; a copy of 2-byte elements moved element by element takes
// eight times the loads and stores of the same bytes moved as 16-byte
// words, and the memory system serves narrow accesses at a fraction of its
// bandwidth (a 32 MiB unpack of bf16 rows took 90 µs on an H100, about a
// quarter of its memory bandwidth). Where both sides share one storage
// order, a copy is a set of runs of bytes (one per row of a row-major
// matrix, per column of a column-major one), and each run can move in any
// word that divides its length, its start addresses and the distance
// between runs; where the runs touch (leading dimension equal to the run's
// length on both sides), the copy is one run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/copy.hpp"

namespace weave::internal::kernels {

// A copy of rows x cols elements of element_bytes each, in each side's
// storage order and leading dimension (in elements).
struct CopyGeometry {
  std::size_t element_bytes = 1;
  void* dst = nullptr;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  const void* src = nullptr;
  int64_t src_ld = 1;
  bool src_row_major = false;
  int64_t rows = 0, cols = 0;
};

// The same copy in word_bytes-sized words: rows, cols and leading
// dimensions in words, orders as given. word_bytes is the element's size
// where the orders differ (a transposition moves single elements).
struct WordCopy {
  std::size_t word_bytes = 1;
  int64_t dst_ld = 1;
  bool dst_row_major = false;
  int64_t src_ld = 1;
  bool src_row_major = false;
  int64_t rows = 0, cols = 0;
};

inline WordCopy widest_word_copy(const CopyGeometry& g) {
  WordCopy w{g.element_bytes, g.dst_ld, g.dst_row_major, g.src_ld, g.src_row_major, g.rows, g.cols};
  if (g.dst_row_major != g.src_row_major || g.rows <= 0 || g.cols <= 0) return w;
  // Runs along the contiguous dimension (minor), one per index of the other.
  int64_t minor = g.dst_row_major ? g.cols : g.rows;
  int64_t runs = g.dst_row_major ? g.rows : g.cols;
  int64_t dst_ld = g.dst_ld, src_ld = g.src_ld;
  if (runs == 1 || (dst_ld == minor && src_ld == minor)) {
    minor *= runs;  // the runs touch: one run
    runs = 1;
    dst_ld = src_ld = minor;
  }
  const uint64_t run_bytes = static_cast<uint64_t>(minor) * g.element_bytes;
  const uint64_t dst_address = reinterpret_cast<uintptr_t>(g.dst), src_address = reinterpret_cast<uintptr_t>(g.src);
  const uint64_t dst_stride = static_cast<uint64_t>(dst_ld) * g.element_bytes;
  const uint64_t src_stride = static_cast<uint64_t>(src_ld) * g.element_bytes;
  std::size_t word = g.element_bytes;
  for (std::size_t candidate = 16; candidate > g.element_bytes; candidate /= 2) {
    const bool fits = run_bytes % candidate == 0 && dst_address % candidate == 0 && src_address % candidate == 0 &&
                      (runs == 1 || (dst_stride % candidate == 0 && src_stride % candidate == 0));
    if (fits) {
      word = candidate;
      break;
    }
  }
  const int64_t scale = static_cast<int64_t>(word / g.element_bytes);
  const int64_t minor_words = minor / scale;
  w.word_bytes = word;
  w.dst_ld = runs == 1 ? minor_words : dst_ld / scale;
  w.src_ld = runs == 1 ? minor_words : src_ld / scale;
  w.rows = g.dst_row_major ? runs : minor_words;
  w.cols = g.dst_row_major ? minor_words : runs;
  return w;
}

// Calls visit(Word{}) with the unsigned word of `bytes` (1, 2, 4, 8 or 16);
// false for none.
template <class Visit>
bool visit_word(std::size_t bytes, Visit&& visit) {
  switch (bytes) {
    case 1: visit(uint8_t{}); return true;
    case 2: visit(uint16_t{}); return true;
    case 4: visit(uint32_t{}); return true;
    case 8: visit(uint64_t{}); return true;
    case 16: visit(Word16{}); return true;
  }
  return false;
}

// The copy functor that moves `w` (Word of w.word_bytes bytes) from src to dst.
template <class Word>
CopyFunctor<Word> word_copy_functor(const WordCopy& w, void* dst, const void* src) {
  CopyFunctor<Word> f;
  f.dst = static_cast<Word*>(dst);
  f.dst_ld = w.dst_ld;
  f.dst_row_major = w.dst_row_major;
  f.src = static_cast<const Word*>(src);
  f.src_ld = w.src_ld;
  f.src_row_major = w.src_row_major;
  f.rows = w.rows;
  f.cols = w.cols;
  return f;
}

}  // namespace weave::internal::kernels
