// The panels of SUMMA: how the K dimension is cut into pieces that travel
// and are multiplied one after another. op(A)'s K lies along the grid
// columns, op(B)'s along the grid rows, each in its own layout; a panel is
// a set of K indices that one grid column holds of op(A) and one grid row
// holds of op(B), each at consecutive local positions, so the panel is one
// block of columns of the A owner's local array and one block of rows of
// the B owner's. Where the two layouts' blocks do not line up, panels are
// their common refinement (a block of A cut where B's blocks end, and the
// reverse); where consecutive blocks of one owner pair lie next to each
// other on both owners (the same block sizes on a square grid), they join
// into one panel, up to a width.
#pragma once

#include <cstdint>
#include <vector>

#include "core/axis_layout.hpp"

namespace weave::internal::plan {

struct Panel {
  int a_owner = 0;       // grid column holding op(A)'s part; -1: every grid column holds it
  int64_t a_local = 0;   // its first local position (a column of op(A)'s local array)
  int b_owner = 0;       // grid row holding op(B)'s part; -1: every grid row
  int64_t b_local = 0;   // its first local position (a row of op(B)'s local array)
  int64_t width = 0;     // K indices
  int64_t k0 = 0;        // the first global K index (for labels)
};

// The panels, ordered by their first K index, each at most max_width wide.
// a_k and b_k have the same extent K.
std::vector<Panel> summa_panels(const AxisLayout& a_k, const AxisLayout& b_k, int64_t max_width);

}  // namespace weave::internal::plan
