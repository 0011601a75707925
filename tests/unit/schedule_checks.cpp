#include "schedule_checks.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <type_traits>
#include <variant>

#include "core/error.hpp"

namespace weave_test {

using weave::internal::DType;
using weave::internal::Op;
using weave::internal::Order;
using namespace weave::internal::plan;

using weave::internal::str;

std::string where(int rank, int step, const Schedule& s) {
  return str("rank ", rank, " step ", step, " (", s.steps[step].label, ")");
}

namespace {

// Whether `r` names a buffer of `s`.
bool region_ok(const Schedule& s, const Region& r) {
  return r.buffer >= 0 && r.buffer < static_cast<int>(s.buffers.size());
}

std::string region_text(const Schedule& s, const Region& r) {
  const std::string name = region_ok(s, r) ? s.buffers[r.buffer].name : str("buffer#", r.buffer);
  return str(name, "[", r.row0, "+", r.rows, ", ", r.col0, "+", r.cols, "]");
}

// Checks that `r` names a buffer and lies inside it.
void check_region(const Schedule& s, const Region& r, const std::string& at, std::vector<std::string>& errors) {
  if (!region_ok(s, r)) {
    errors.push_back(str(at, ": region names buffer ", r.buffer, " of ", s.buffers.size()));
    return;
  }
  const BufferSpec& b = s.buffers[r.buffer];
  if (r.row0 < 0 || r.col0 < 0 || r.rows < 0 || r.cols < 0 || r.row0 + r.rows > b.rows || r.col0 + r.cols > b.cols)
    errors.push_back(str(at, ": region ", region_text(s, r), " is outside buffer ", b.name, " (", b.rows, " x ",
                          b.cols, ")"));
}

void check_buffers(const weave::internal::Problem& p, const Schedule& s, int rank, std::vector<std::string>& errors) {
  if (s.buffers.size() < static_cast<std::size_t>(kFirstWorkspaceBuffer)) {
    errors.push_back(str("rank ", rank, ": the schedule has ", s.buffers.size(), " buffers, fewer than the caller's"));
    return;
  }
  auto check_user = [&](int id, const weave::internal::LocalBlock& block, weave::internal::DType type) {
    const BufferSpec& b = s.buffers[id];
    if (b.rows != block.rows || b.cols != block.cols || b.ld != block.ld || b.order != block.order || b.dtype != type)
      errors.push_back(str("rank ", rank, ": buffer ", b.name, " is ", b.rows, " x ", b.cols, " ld ", b.ld, " ",
                            weave::internal::dtype_name(b.dtype), " but the caller's block is ", block.rows, " x ",
                            block.cols, " ld ", block.ld, " ", weave::internal::dtype_name(type)));
  };
  check_user(kBufferA, p.a, p.a_type);
  check_user(kBufferB, p.b, p.b_type);
  check_user(kBufferC, p.c, p.c_type);
  if (p.has_bias) check_user(kBufferBias, p.bias, p.bias_type);
  // The caller's scales, as the layout of each scaled operand's block says.
  auto check_scales = [&](int id, const weave::internal::ScaleLayout& layout) {
    const BufferSpec& b = s.buffers[id];
    if (layout.empty() ? b.rows * b.cols != 0
                       : b.rows != layout.rows || b.cols != layout.cols || b.ld != layout.ld ||
                             b.order != layout.order || b.dtype != layout.dtype)
      errors.push_back(str("rank ", rank, ": buffer ", b.name, " is ", b.rows, " x ", b.cols, " ld ", b.ld,
                            " but the scale layout of the block is ", layout.rows, " x ", layout.cols, " ld ",
                            layout.ld));
  };
  check_scales(kBufferAScale, p.a_scales);
  check_scales(kBufferBScale, p.b_scales);
  const BufferSpec& g = s.buffers[kBufferGathered];
  const int64_t g_rows = p.op_a == Op::N ? p.m : p.k, g_cols = p.op_a == Op::N ? p.k : p.m;
  if (g.rows != g_rows || g.cols != g_cols || g.order != p.a.order)
    errors.push_back(str("rank ", rank, ": the gathered-A buffer is ", g.rows, " x ", g.cols,
                          ", expected A's full stored shape ", g_rows, " x ", g_cols, " in A's order"));
  for (std::size_t id = 0; id < s.buffers.size(); ++id) {
    const BufferSpec& b = s.buffers[id];
    if (b.rows < 0 || b.cols < 0 || b.ld < weave::internal::min_leading_dimension(b.rows, b.cols, b.order))
      errors.push_back(str("rank ", rank, ": buffer ", b.name, " (", b.rows, " x ", b.cols, ") has ld ", b.ld));
    if (id < static_cast<std::size_t>(kFirstWorkspaceBuffer)) continue;
    const int64_t size = static_cast<int64_t>(weave::internal::dtype_size(b.dtype));
    const int64_t extent = b.rows == 0 || b.cols == 0 ? 0
                           : b.order == Order::ColMajor ? b.ld * (b.cols - 1) + b.rows
                                                        : b.ld * (b.rows - 1) + b.cols;
    if (b.offset_bytes < 0 || b.offset_bytes % size != 0 || b.offset_bytes + extent * size > s.workspace_bytes)
      errors.push_back(str("rank ", rank, ": workspace buffer ", b.name, " at byte ", b.offset_bytes, " (",
                            extent * size, " bytes) does not fit the ", s.workspace_bytes, "-byte workspace"));
  }
}

// Whether `r` holds exactly the bytes of a tight row-major matrix of its
// shape (what a peer reads as a PeerSum term).
bool tight_row_major(const Schedule& s, const Region& r) {
  if (!s.contiguous(r)) return false;
  return s.buffer(r).order == Order::RowMajor || r.rows <= 1 || r.cols <= 1;
}

// op(region) extents.
int64_t op_rows(const Region& r, Op op) { return op == Op::N ? r.rows : r.cols; }
int64_t op_cols(const Region& r, Op op) { return op == Op::N ? r.cols : r.rows; }

void check_step_shapes(const Schedule& s, int rank, int i, std::vector<std::string>& errors) {
  const Step& step = s.steps[i];
  const std::string at = where(rank, i, s);
  std::visit(
      [&](const auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          check_region(s, op.a, at, errors);
          check_region(s, op.b, at, errors);
          check_region(s, op.c, at, errors);
          if (op.has_addend) {
            check_region(s, op.addend, at, errors);
            if (op.addend.rows != op.c.rows || op.addend.cols != op.c.cols ||
                s.buffer(op.addend).dtype != s.buffer(op.c).dtype || s.buffer(op.addend).order != s.buffer(op.c).order)
              errors.push_back(str(at, ": the GEMM's addend ", region_text(s, op.addend), " is not laid out as its c ",
                                   region_text(s, op.c)));
          }
          if (op_rows(op.a, op.op_a) != op.c.rows || op_cols(op.b, op.op_b) != op.c.cols ||
              op_cols(op.a, op.op_a) != op_rows(op.b, op.op_b))
            errors.push_back(str(at, ": GEMM shapes do not fit: op(a) ", op_rows(op.a, op.op_a), " x ",
                                  op_cols(op.a, op.op_a), ", op(b) ", op_rows(op.b, op.op_b), " x ",
                                  op_cols(op.b, op.op_b), ", c ", op.c.rows, " x ", op.c.cols));
          // Scales: tight, laid out for the operand region alone (what cuBLASLt takes).
          const int64_t k = op_cols(op.a, op.op_a);
          for (const auto& [scales, operand, outer] :
               {std::make_tuple(&op.a_scale, &op.a, op.c.rows), std::make_tuple(&op.b_scale, &op.b, op.c.cols)}) {
            const bool scaled_type = weave::internal::is_scaled(s.buffer(*operand).dtype);
            if (scales->scaled() != scaled_type)
              errors.push_back(str(at, ": operand ", region_text(s, *operand), scaled_type ? " has no scales" : " has scales"));
            if (!scales->scaled() || op.c.empty() || k == 0) continue;
            check_region(s, scales->region, at, errors);
            if (!region_ok(s, scales->region)) continue;
            const weave::internal::ScaleLayout layout = weave::internal::scale_layout(scales->mode, outer, k);
            const BufferSpec& b = s.buffer(scales->region);
            if (scales->region.rows != layout.rows || scales->region.cols != layout.cols || b.order != layout.order ||
                b.dtype != layout.dtype || !s.contiguous(scales->region) || (layout.order == Order::RowMajor && b.ld != layout.ld))
              errors.push_back(str(at, ": scales ", region_text(s, scales->region), " are not the tight ",
                                    weave::internal::scale_mode_name(scales->mode), " scales of a ", outer, " x ", k,
                                    " block (", layout.rows, " x ", layout.cols, ")"));
          }
        } else if constexpr (std::is_same_v<T, EpilogueOp>) {
          check_region(s, op.dst, at, errors);
          if (op.has_src) {
            check_region(s, op.src, at, errors);
            if (op.src.rows != op.dst.rows || op.src.cols != op.dst.cols)
              errors.push_back(str(at, ": epilogue src ", region_text(s, op.src), " and dst ",
                                    region_text(s, op.dst), " differ in shape"));
          }
          if (op.more_src.size() > static_cast<std::size_t>(kMaxMoreSources) || (!op.more_src.empty() && !op.has_src))
            errors.push_back(str(at, ": ", op.more_src.size(), " more sources (at most ", kMaxMoreSources,
                                  ", and only with a src)"));
          for (const Region& more : op.more_src) {
            check_region(s, more, at, errors);
            if (!region_ok(s, more) || !region_ok(s, op.src)) continue;
            const BufferSpec &a = s.buffer(more), &b = s.buffer(op.src);
            if (more.rows != op.src.rows || more.cols != op.src.cols || a.dtype != b.dtype || a.order != b.order ||
                a.ld != b.ld)
              errors.push_back(str(at, ": more source ", region_text(s, more), " is not laid out like src ",
                                    region_text(s, op.src)));
          }
          if (op.has_bias) {
            check_region(s, op.bias, at, errors);
            // The caller's bias, or a workspace copy of it (moved into C's layout).
            const bool bias_buffer = op.bias.buffer == kBufferBias || op.bias.buffer >= kFirstWorkspaceBuffer;
            if (!bias_buffer || op.bias.rows != 1 || op.bias.cols != op.dst.cols)
              errors.push_back(str(at, ": bias region ", region_text(s, op.bias),
                                    " is not one row of bias as wide as ", region_text(s, op.dst)));
          }
        } else if constexpr (std::is_same_v<T, SendOp> || std::is_same_v<T, RecvOp>) {
          const Region& r = [&]() -> const Region& {
            if constexpr (std::is_same_v<T, SendOp>)
              return op.src;
            else
              return op.dst;
          }();
          check_region(s, r, at, errors);
          if (region_ok(s, r) && !s.contiguous(r))
            errors.push_back(str(at, ": point-to-point region ", region_text(s, r), " is not contiguous"));
          if (op.peer < 0 || op.peer >= s.group_size || op.peer == rank)
            errors.push_back(str(at, ": peer ", op.peer, " is not another rank of a group of ", s.group_size));
        } else if constexpr (std::is_same_v<T, PublishOp>) {
          check_region(s, op.src, at, errors);
          if (region_ok(s, op.src)) {
            if (op.src.buffer < kFirstWorkspaceBuffer)
              errors.push_back(str(at, ": publishes ", region_text(s, op.src), ", which is not in the workspace"));
            else if (!tight_row_major(s, op.src))
              errors.push_back(str(at, ": publishes ", region_text(s, op.src), ", which is not tight row-major"));
          }
          if (op.peer < 0 || op.peer >= s.group_size || op.peer == rank)
            errors.push_back(str(at, ": peer ", op.peer, " is not another rank of a group of ", s.group_size));
        } else if constexpr (std::is_same_v<T, PeerSumOp>) {
          check_region(s, op.dst, at, errors);
          if (op.terms.empty() || op.terms.size() > static_cast<std::size_t>(kMaxPeerSumTerms))
            errors.push_back(str(at, ": ", op.terms.size(), " terms (1 to ", kMaxPeerSumTerms, ")"));
          for (const SumTerm& term : op.terms) {
            if (term.remote) {
              if (term.peer < 0 || term.peer >= s.group_size || term.peer == rank)
                errors.push_back(str(at, ": a remote term of peer ", term.peer, " in a group of ", s.group_size));
              continue;
            }
            check_region(s, term.local, at, errors);
            if (!region_ok(s, term.local)) continue;
            if (term.local.rows != op.dst.rows || term.local.cols != op.dst.cols ||
                s.buffer(term.local).dtype != op.term_type || !tight_row_major(s, term.local))
              errors.push_back(str(at, ": term ", region_text(s, term.local), " is not a tight row-major ",
                                    op.dst.rows, " x ", op.dst.cols, " block of ",
                                    weave::internal::dtype_name(op.term_type)));
          }
          if (op.has_bias) {
            check_region(s, op.bias, at, errors);
            if (op.bias.buffer != kBufferBias || op.bias.rows != 1 || op.bias.cols != op.dst.cols)
              errors.push_back(str(at, ": bias region ", region_text(s, op.bias),
                                    " is not one row of bias as wide as ", region_text(s, op.dst)));
          }
          if (op.has_copy) {
            check_region(s, op.copy, at, errors);
            if (region_ok(s, op.copy) && region_ok(s, op.dst) &&
                (op.copy.buffer < kFirstWorkspaceBuffer || op.copy.rows != op.dst.rows ||
                 op.copy.cols != op.dst.cols || s.buffer(op.copy).dtype != s.buffer(op.dst).dtype ||
                 !tight_row_major(s, op.copy)))
              errors.push_back(str(at, ": copy ", region_text(s, op.copy),
                                    " is not a tight row-major workspace block like dst ", region_text(s, op.dst)));
          }
        } else if constexpr (std::is_same_v<T, AwaitReleaseOp>) {
          if (op.peer < 0 || op.peer >= s.group_size || op.peer == rank)
            errors.push_back(str(at, ": peer ", op.peer, " is not another rank of a group of ", s.group_size));
        } else if constexpr (std::is_same_v<T, QuantizeOp>) {
          // Rows of op(src) into the same rows of op(dst), of a narrower
          // type; one float32 scale per row where the type has scales.
          check_region(s, op.src, at, errors);
          check_region(s, op.dst, at, errors);
          if (op_rows(op.src, op.op) != op_rows(op.dst, op.op) || op_cols(op.src, op.op) != op_cols(op.dst, op.op))
            errors.push_back(str(at, ": quantizes ", region_text(s, op.src), " into ", region_text(s, op.dst),
                                  ", of another shape"));
          if (region_ok(s, op.src) && region_ok(s, op.dst) &&
              weave::internal::dtype_size(s.buffer(op.dst).dtype) >= weave::internal::dtype_size(s.buffer(op.src).dtype))
            errors.push_back(str(at, ": quantizes into ", weave::internal::dtype_name(s.buffer(op.dst).dtype),
                                  ", which is not narrower than ", weave::internal::dtype_name(s.buffer(op.src).dtype)));
          if (op.has_scales != weave::internal::is_scaled(s.buffer(op.dst).dtype))
            errors.push_back(str(at, ": quantizes into ", weave::internal::dtype_name(s.buffer(op.dst).dtype),
                                  op.has_scales ? " with" : " without", " scales"));
          if (op.has_scales) {
            check_region(s, op.scales, at, errors);
            if (op.scales.rows != op_rows(op.src, op.op) || op.scales.cols != 1 ||
                (region_ok(s, op.scales) && s.buffer(op.scales).dtype != weave::internal::DType::F32))
              errors.push_back(str(at, ": scales ", region_text(s, op.scales), " are not one float32 per row"));
          }
        } else if constexpr (std::is_same_v<T, RearrangeOp>) {
          check_region(s, op.dst, at, errors);
          check_region(s, op.src, at, errors);
          if (!region_ok(s, op.dst) || !region_ok(s, op.src)) return;
          if (s.buffer(op.dst).dtype != s.buffer(op.src).dtype)
            errors.push_back(str(at, ": rearrangement between element types"));
          // Every run lies inside dst and inside op(src).
          auto runs_fit = [&](const std::vector<IndexRun>& runs, int64_t dst_extent, int64_t src_extent,
                              const char* what) {
            for (const IndexRun& r : runs)
              if (r.length < 0 || r.dst < 0 || r.src < 0 || r.dst + r.length > dst_extent ||
                  r.src + r.length > src_extent)
                errors.push_back(str(at, ": ", what, " run ", r.src, " -> ", r.dst, " (", r.length,
                                      ") leaves dst (", dst_extent, ") or op(src) (", src_extent, ")"));
          };
          runs_fit(op.rows, op.dst.rows, op_rows(op.src, op.src_op), "row");
          runs_fit(op.cols, op.dst.cols, op_cols(op.src, op.src_op), "column");
        } else {
          check_region(s, op.send, at, errors);
          check_region(s, op.recv, at, errors);
        }
      },
      step.op);
}

void check_steps(const Schedule& s, int rank, std::vector<std::string>& errors) {
  int last_batch = -1;
  for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
    const Step& step = s.steps[i];
    const std::string at = where(rank, i, s);
    for (int d : step.deps) {
      if (d < 0 || d >= i) {
        errors.push_back(str(at, ": depends on step ", d, ", which does not precede it"));
        continue;
      }
      // The executor issues a batch once all of its steps are ready.
      if (step.batch >= 0 && s.steps[d].batch == step.batch)
        errors.push_back(str(at, ": depends on step ", d, " of its own batch ", step.batch,
                              ", so the batch can never be issued"));
    }
    const bool comm_kind = !is_compute_kind(step.kind());
    if (comm_kind && step.lane != kCommLane)
      errors.push_back(str(at, ": a communication step on compute lane ", step.lane));
    if (!comm_kind && (step.lane < 0 || step.lane >= s.compute_lanes))
      errors.push_back(str(at, ": a compute step on lane ", step.lane, " of ", s.compute_lanes));
    if (!comm_kind && step.batch >= 0) errors.push_back(str(at, ": a compute step in batch ", step.batch));
    if (comm_kind && step.batch >= 0) {
      if (step.batch < last_batch)
        errors.push_back(str(at, ": batch ", step.batch, " after batch ", last_batch,
                              "; batches must be issued in order so neighbours pair them up"));
      last_batch = std::max(last_batch, step.batch);
    }
    check_step_shapes(s, rank, i, errors);
  }
}

void check_collectives(const std::vector<Schedule>& schedules, std::vector<std::string>& errors) {
  const int P = static_cast<int>(schedules.size());
  std::vector<std::vector<int>> order(P);
  for (int r = 0; r < P; ++r)
    for (int i = 0; i < static_cast<int>(schedules[r].steps.size()); ++i)
      if (schedules[r].steps[i].kind() == StepKind::Collective) order[r].push_back(i);
  for (int r = 1; r < P; ++r)
    if (order[r].size() != order[0].size())
      errors.push_back(str("rank ", r, " has ", order[r].size(), " collectives, rank 0 has ", order[0].size()));
  for (int r = 0; r < P; ++r) {
    const Schedule& s = schedules[r];
    for (std::size_t n = 0; n < order[r].size(); ++n) {
      const int i = order[r][n];
      const auto& op = std::get<CollectiveOp>(s.steps[i].op);
      const std::string at = where(r, i, s);
      if (n < order[0].size()) {
        const auto& ref = std::get<CollectiveOp>(schedules[0].steps[order[0][n]].op);
        if (op.kind != ref.kind || op.counts != ref.counts)
          errors.push_back(str(at, ": collective ", n, " is ", collective_name(op.kind), " with ", op.counts.size(),
                                " counts, rank 0's is ", collective_name(ref.kind), " with ", ref.counts.size(),
                                " counts (or the counts differ)"));
      }
      if (!region_ok(s, op.send) || !region_ok(s, op.recv)) continue;
      if (!s.contiguous(op.send) || !s.contiguous(op.recv))
        errors.push_back(str(at, ": collective regions must be contiguous"));
      if (s.buffer(op.send).dtype != s.buffer(op.recv).dtype)
        errors.push_back(str(at, ": collective send and receive regions differ in element type"));
      int64_t total = 0;
      for (int64_t c : op.counts) total += c;
      int64_t want_send = 0, want_recv = 0;
      switch (op.kind) {
        case CollectiveKind::AllGather:
          if (static_cast<int>(op.counts.size()) != P) {
            errors.push_back(str(at, ": all-gather with ", op.counts.size(), " counts for ", P, " ranks"));
            continue;
          }
          want_send = op.counts[r];
          want_recv = total;
          break;
        case CollectiveKind::ReduceScatter:
          if (static_cast<int>(op.counts.size()) != P) {
            errors.push_back(str(at, ": reduce-scatter with ", op.counts.size(), " counts for ", P, " ranks"));
            continue;
          }
          want_send = total;
          want_recv = op.counts[r];
          break;
        case CollectiveKind::AllReduce:
          want_send = want_recv = total;
          if (op.send.buffer != op.recv.buffer || op.send.row0 != op.recv.row0 || op.send.col0 != op.recv.col0)
            errors.push_back(str(at, ": all-reduce is in place, but send and receive regions differ"));
          break;
      }
      if (op.send.elements() != want_send || op.recv.elements() != want_recv)
        errors.push_back(str(at, ": ", collective_name(op.kind), " regions hold ", op.send.elements(), " and ",
                              op.recv.elements(), " elements, the counts say ", want_send, " and ", want_recv));
    }
  }
}

}  // namespace

PointToPointMatching match_point_to_point(const std::vector<Schedule>& schedules) {
  PointToPointMatching m;
  const int P = static_cast<int>(schedules.size());
  m.partner.resize(P);
  // (from, to, tag) -> step on the sending / receiving rank.
  using Key = std::tuple<int, int, int>;
  std::map<Key, StepRef> sends, recvs;
  for (int r = 0; r < P; ++r) {
    const Schedule& s = schedules[r];
    m.partner[r].assign(s.steps.size(), StepRef{});
    for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
      const Step& step = s.steps[i];
      if (const auto* send = std::get_if<SendOp>(&step.op)) {
        if (!sends.emplace(Key{r, send->peer, send->tag}, StepRef{r, i}).second)
          m.errors.push_back(str(where(r, i, s), ": a second send to rank ", send->peer, " with tag ", send->tag));
      } else if (const auto* recv = std::get_if<RecvOp>(&step.op)) {
        if (!recvs.emplace(Key{recv->peer, r, recv->tag}, StepRef{r, i}).second)
          m.errors.push_back(
              str(where(r, i, s), ": a second receive from rank ", recv->peer, " with tag ", recv->tag));
      }
    }
  }
  for (const auto& [key, send] : sends) {
    const Schedule& from = schedules[send.rank];
    auto found = recvs.find(key);
    if (found == recvs.end()) {
      m.errors.push_back(str(where(send.rank, send.step, from), ": send to rank ", std::get<1>(key), " tag ",
                              std::get<2>(key), " has no matching receive"));
      continue;
    }
    const StepRef recv = found->second;
    const Schedule& to = schedules[recv.rank];
    m.partner[send.rank][send.step] = recv;
    m.partner[recv.rank][recv.step] = send;
    const Step& ss = from.steps[send.step];
    const Step& rs = to.steps[recv.step];
    const Region& src = std::get<SendOp>(ss.op).src;
    const Region& dst = std::get<RecvOp>(rs.op).dst;
    if (region_ok(from, src) && region_ok(to, dst)) {
      if (from.bytes(src) != to.bytes(dst) || from.buffer(src).dtype != to.buffer(dst).dtype)
        m.errors.push_back(str(where(send.rank, send.step, from), " sends ", from.bytes(src), " bytes of ",
                                weave::internal::dtype_name(from.buffer(src).dtype), " but ", where(recv.rank, recv.step, to),
                                " receives ", to.bytes(dst), " bytes of ", weave::internal::dtype_name(to.buffer(dst).dtype)));
      // The bytes mean the same on both sides: one shape, and one storage
      // order unless the block is a single row or column.
      const bool vector = src.rows <= 1 || src.cols <= 1;
      if (src.rows != dst.rows || src.cols != dst.cols ||
          (!vector && from.buffer(src).order != to.buffer(dst).order))
        m.errors.push_back(str(where(send.rank, send.step, from), " sends a ", src.rows, " x ", src.cols, " ",
                                weave::internal::order_name(from.buffer(src).order), " block but ",
                                where(recv.rank, recv.step, to), " receives a ", dst.rows, " x ", dst.cols, " ",
                                weave::internal::order_name(to.buffer(dst).order), " one"));
    }
    if (ss.batch != rs.batch)
      m.errors.push_back(str(where(send.rank, send.step, from), " is in batch ", ss.batch, " but its receive ",
                              where(recv.rank, recv.step, to), " is in batch ", rs.batch,
                              "; grouped batches would deadlock"));
  }
  for (const auto& [key, recv] : recvs)
    if (!sends.count(key))
      m.errors.push_back(str(where(recv.rank, recv.step, schedules[recv.rank]), ": receive from rank ",
                              std::get<0>(key), " tag ", std::get<2>(key), " has no matching send"));
  return m;
}

PeerReadMatching match_peer_reads(const std::vector<Schedule>& schedules) {
  PeerReadMatching m;
  const int P = static_cast<int>(schedules.size());
  m.publication.resize(P);
  m.awaited.resize(P);
  using Key = std::tuple<int, int, int>;  // publisher, reader, tag
  std::map<Key, StepRef> publishes, awaits;
  struct Read {
    StepRef sum;
    std::size_t term;
  };
  std::map<Key, Read> reads;
  for (int r = 0; r < P; ++r) {
    const Schedule& s = schedules[r];
    m.publication[r].assign(s.steps.size(), {});
    m.awaited[r].assign(s.steps.size(), StepRef{});
    for (int i = 0; i < static_cast<int>(s.steps.size()); ++i) {
      const Step& step = s.steps[i];
      if (const auto* pub = std::get_if<PublishOp>(&step.op)) {
        if (!publishes.emplace(Key{r, pub->peer, pub->tag}, StepRef{r, i}).second)
          m.errors.push_back(str(where(r, i, s), ": a second publish to rank ", pub->peer, " with tag ", pub->tag));
      } else if (const auto* sum = std::get_if<PeerSumOp>(&step.op)) {
        m.publication[r][i].assign(sum->terms.size(), StepRef{});
        for (std::size_t t = 0; t < sum->terms.size(); ++t) {
          const SumTerm& term = sum->terms[t];
          if (!term.remote) continue;
          if (!reads.emplace(Key{term.peer, r, term.tag}, Read{StepRef{r, i}, t}).second)
            m.errors.push_back(str(where(r, i, s), ": a second read of rank ", term.peer, "'s tag ", term.tag));
        }
      } else if (const auto* await = std::get_if<AwaitReleaseOp>(&step.op)) {
        if (!awaits.emplace(Key{r, await->peer, await->tag}, StepRef{r, i}).second)
          m.errors.push_back(str(where(r, i, s), ": a second wait for rank ", await->peer, "'s release of tag ",
                                  await->tag));
      }
    }
  }
  for (const auto& [key, read] : reads) {
    const auto [publisher, reader, tag] = key;
    const Schedule& to = schedules[reader];
    const auto& sum = std::get<PeerSumOp>(to.steps[read.sum.step].op);
    auto found = publishes.find(key);
    if (found == publishes.end()) {
      m.errors.push_back(str(where(reader, read.sum.step, to), ": reads rank ", publisher, "'s tag ", tag,
                              ", which that rank never publishes to it (no ready signal)"));
      continue;
    }
    m.publication[reader][read.sum.step][read.term] = found->second;
    const Schedule& from = schedules[publisher];
    const auto& pub = std::get<PublishOp>(from.steps[found->second.step].op);
    if (region_ok(from, pub.src) &&
        (pub.src.elements() != sum.dst.elements() || from.buffer(pub.src).dtype != sum.term_type))
      m.errors.push_back(str(where(publisher, found->second.step, from), " publishes ", pub.src.elements(),
                              " elements of ", weave::internal::dtype_name(from.buffer(pub.src).dtype), " but ",
                              where(reader, read.sum.step, to), " reads ", sum.dst.elements(), " of ",
                              weave::internal::dtype_name(sum.term_type)));
  }
  for (const auto& [key, publish] : publishes) {
    const auto [publisher, reader, tag] = key;
    const Schedule& s = schedules[publisher];
    if (!reads.count(key))
      m.errors.push_back(str(where(publisher, publish.step, s), ": publishes tag ", tag, " to rank ", reader,
                              ", which never reads it"));
    auto await = awaits.find(key);
    if (await == awaits.end()) {
      m.errors.push_back(str(where(publisher, publish.step, s), ": publishes tag ", tag, " to rank ", reader,
                              " but never waits for its release, so the next execute could overwrite it"));
      continue;
    }
    m.awaited[publisher][await->second.step] = publish;
    if (await->second.step < publish.step)
      m.errors.push_back(str(where(publisher, await->second.step, s), ": waits for the release of step ",
                              publish.step, ", which comes after it"));
  }
  for (const auto& [key, await] : awaits)
    if (!publishes.count(key))
      m.errors.push_back(str(where(await.rank, await.step, schedules[await.rank]), ": waits for the release of tag ",
                              std::get<2>(key), " by rank ", std::get<1>(key), ", which it never publishes"));
  return m;
}

std::vector<std::string> check_schedules(const std::vector<weave::internal::Problem>& problems,
                                         const std::vector<Schedule>& schedules) {
  std::vector<std::string> errors;
  const int P = static_cast<int>(schedules.size());
  if (static_cast<int>(problems.size()) != P) {
    errors.push_back(str(problems.size(), " problems for ", P, " schedules"));
    return errors;
  }
  for (int r = 0; r < P; ++r) {
    const Schedule& s = schedules[r];
    if (s.group_size != P || s.group_rank != r)
      errors.push_back(str("schedule ", r, " says it is rank ", s.group_rank, " of ", s.group_size));
    check_buffers(problems[r], s, r, errors);
    check_steps(s, r, errors);
  }
  const PointToPointMatching m = match_point_to_point(schedules);
  errors.insert(errors.end(), m.errors.begin(), m.errors.end());
  const PeerReadMatching reads = match_peer_reads(schedules);
  errors.insert(errors.end(), reads.errors.begin(), reads.errors.end());
  check_collectives(schedules, errors);
  return errors;
}

}  // namespace weave_test
