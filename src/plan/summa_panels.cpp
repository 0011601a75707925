#include "plan/summa_panels.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.hpp"

namespace weave::internal::plan {

std::vector<Panel> summa_panels(const AxisLayout& a_k, const AxisLayout& b_k, int64_t max_width) {
  if (a_k.extent() != b_k.extent()) fail(WEAVE_ERROR_INTERNAL, "the K axes of op(A) and op(B) differ in extent");
  if (max_width < 1) fail(WEAVE_ERROR_INTERNAL, "panel width ", max_width);
  std::vector<Panel> panels;
  // The panel each owner pair may still extend.
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
    // A piece wider than a panel starts new panels as it goes.
    for (int64_t done = 0; done < length;) {
      const std::pair<int, int> owners{sa.owner, sb.owner};
      auto found = open.find(owners);
      int64_t take = std::min(max_width, length - done);
      if (found != open.end()) {
        Panel& p = panels[found->second];
        if (p.a_local + p.width == a_local + done && p.b_local + p.width == b_local + done && p.width < max_width) {
          take = std::min(take, max_width - p.width);
          p.width += take;
          done += take;
          continue;
        }
      }
      panels.push_back({sa.owner, a_local + done, sb.owner, b_local + done, take, g + done});
      open[owners] = panels.size() - 1;
      done += take;
    }
    g += length;
  }
  return panels;
}

}  // namespace weave::internal::plan
