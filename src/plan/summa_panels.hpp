// The panels of SUMMA: how the K dimension is cut into pieces that travel
// and are multiplied one after another. op(A)'s K lies along the grid
// columns, op(B)'s along the grid rows, each in its own layout. A piece is
// a run of K indices that one grid column holds of op(A) and one grid row
// holds of op(B), each at consecutive local positions: one block of columns
// of the A owner's local array and one block of rows of the B owner's.
// Where the two layouts' blocks do not line up, pieces are their common
// refinement (a block of A cut where B's blocks end, and the reverse).
//
// A panel joins the pieces of one owner pair, in K order, up to a width:
// the pieces' products add up in C alike whichever panel carries them, and
// a wide panel costs one broadcast and one GEMM (for 16-bit C one pass over
// the float32 sums) where narrow ones cost one each. Where the joined
// pieces lie next to each other in an owner's local array the panel is
// used where it lies; where they do not (a 1 x P grid's op(B), whose K rows
// of one A owner's blocks are P blocks apart), that side is packed into
// the panel's slot, piece after piece, before it is sent or multiplied.
#pragma once

#include <cstdint>
#include <vector>

#include "core/axis_layout.hpp"

namespace weave::internal::plan {

// `width` K indices at local positions [a_local, a_local + width) of
// op(A)'s owner and [b_local, b_local + width) of op(B)'s.
struct PanelPiece {
  int64_t a_local = 0;  // a column of op(A)'s local array
  int64_t b_local = 0;  // a row of op(B)'s local array
  int64_t width = 0;
  int64_t k0 = 0;  // the first global K index (for labels)
};

struct Panel {
  int a_owner = 0;  // grid column holding op(A)'s part; -1: every grid column holds it
  int b_owner = 0;  // grid row holding op(B)'s part; -1: every grid row
  int64_t width = 0;  // K indices, the pieces' widths summed
  // In K order; piece i fills the panel's positions after pieces 0..i-1.
  // Two consecutive pieces never follow each other on both owners (those
  // are one piece).
  std::vector<PanelPiece> pieces;

  int64_t k0() const { return pieces.front().k0; }
  // Whether the pieces lie one after another in op(A)'s owner's local
  // array (a) or in op(B)'s (!a): then the panel is one block of it.
  bool contiguous(bool a) const;
};

// The panels, ordered by the first K index of each (the order of their
// first pieces), each at most max_width wide. a_k and b_k have the same
// extent K. Every rank computes the same panels from the same layouts.
std::vector<Panel> summa_panels(const AxisLayout& a_k, const AxisLayout& b_k, int64_t max_width);

}  // namespace weave::internal::plan
