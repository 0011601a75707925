#include "plan/summa_panels.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.hpp"

namespace weave::internal::plan {

bool Panel::contiguous(bool a) const {
  for (std::size_t i = 1; i < pieces.size(); ++i) {
    const PanelPiece &before = pieces[i - 1], &next = pieces[i];
    if ((a ? before.a_local : before.b_local) + before.width != (a ? next.a_local : next.b_local)) return false;
  }
  return true;
}

std::vector<Panel> summa_panels(const AxisLayout& a_k, const AxisLayout& b_k, int64_t max_width) {
  if (a_k.extent() != b_k.extent()) fail(WEAVE_ERROR_INTERNAL, "the K axes of op(A) and op(B) differ in extent");
  if (max_width < 1) fail(WEAVE_ERROR_INTERNAL, "panel width ", max_width);
  std::vector<Panel> panels;
  // The panel each owner pair fills until it is max_width wide. Pieces go
  // in K order into their pair's panel, so panels stay in the order of
  // their first pieces (a panel is appended when its first piece comes)
  // and every rank sums K in the same order.
  std::map<std::pair<int, int>, std::size_t> open;
  const std::vector<AxisLayout::Segment> as = a_k.segments(), bs = b_k.segments();
  std::size_t ia = 0, ib = 0;
  int64_t g = 0;
  const int64_t K = a_k.extent();
  while (g < K) {
    while (as[ia].global0 + as[ia].length <= g) ++ia;
    while (bs[ib].global0 + bs[ib].length <= g) ++ib;
    const AxisLayout::Segment &sa = as[ia], &sb = bs[ib];
    const int64_t length = std::min(sa.global0 + sa.length, sb.global0 + sb.length) - g;
    const int64_t a_local = sa.local0 + (g - sa.global0), b_local = sb.local0 + (g - sb.global0);
    const std::pair<int, int> owners{sa.owner, sb.owner};
    // A piece wider than what its panel has left goes on in new panels.
    for (int64_t done = 0; done < length;) {
      auto found = open.find(owners);
      if (found == open.end() || panels[found->second].width == max_width) {
        panels.push_back(Panel{sa.owner, sb.owner, 0, {}});
        found = open.insert_or_assign(owners, panels.size() - 1).first;
      }
      Panel& p = panels[found->second];
      const int64_t take = std::min(max_width - p.width, length - done);
      const PanelPiece piece{a_local + done, b_local + done, take, g + done};
      PanelPiece* last = p.pieces.empty() ? nullptr : &p.pieces.back();
      if (last && last->a_local + last->width == piece.a_local && last->b_local + last->width == piece.b_local)
        last->width += take;  // next to the last piece on both owners: one piece
      else
        p.pieces.push_back(piece);
      p.width += take;
      done += take;
    }
    g += length;
  }
  return panels;
}

}  // namespace weave::internal::plan
