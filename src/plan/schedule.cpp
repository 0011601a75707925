#include "plan/schedule.hpp"

#include <algorithm>
#include <map>
#include <sstream>

namespace weave::internal::plan {

const char* buffer_name(int buffer) {
  switch (buffer) {
    case kBufferA: return "A";
    case kBufferB: return "B";
    case kBufferC: return "C";
    case kBufferBias: return "bias";
    case kBufferGathered: return "gathered";
    case kBufferAScale: return "A scales";
    case kBufferBScale: return "B scales";
    case kBufferGatheredScale: return "gathered A scales";
    default: return "workspace";
  }
}

const char* scalar_name(Scalar s) {
  switch (s) {
    case Scalar::Zero: return "0";
    case Scalar::One: return "1";
    case Scalar::Alpha: return "alpha";
    case Scalar::Beta: return "beta";
  }
  return "?";
}

const char* collective_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::AllGather: return "allgather";
    case CollectiveKind::ReduceScatter: return "reduce-scatter";
    case CollectiveKind::AllReduce: return "allreduce";
  }
  return "?";
}

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::Gemm: return "gemm";
    case StepKind::Epilogue: return "epilogue";
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::Collective: return "collective";
    case StepKind::Publish: return "publish";
    case StepKind::PeerSum: return "peer-sum";
    case StepKind::AwaitRelease: return "await-release";
    case StepKind::Quantize: return "quantize";
    case StepKind::Rearrange: return "rearrange";
  }
  return "?";
}

const char* algorithm_name(Algorithm a) {
  switch (a) {
    case Algorithm::Ring: return "ring";
    case Algorithm::Sequential: return "sequential";
    case Algorithm::Direct: return "direct";
    case Algorithm::Pipelined: return "pipelined";
    case Algorithm::Hierarchical: return "hierarchical";
    case Algorithm::Summa: return "SUMMA";
  }
  return "?";
}

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::Forward: return "forward";
    case Direction::Backward: return "backward";
    case Direction::Bidirectional: return "bidirectional";
  }
  return "?";
}

int64_t RearrangeOp::elements() const {
  int64_t rows_total = 0, cols_total = 0;
  for (const IndexRun& r : rows) rows_total = checked_add(rows_total, r.length, "the rows a rearrangement copies");
  for (const IndexRun& c : cols) cols_total = checked_add(cols_total, c.length, "the columns a rearrangement copies");
  return checked_mul(rows_total, cols_total, "the elements a rearrangement copies");
}

bool Schedule::contiguous(const Region& r) const {
  const BufferSpec& b = buffer(r);
  if (r.empty()) return true;
  if (b.order == Order::ColMajor) return r.cols == 1 || r.rows == b.ld;
  return r.rows == 1 || r.cols == b.ld;
}

int64_t Schedule::bytes(const Region& r) const {
  return checked_mul(r.elements(), static_cast<int64_t>(dtype_size(buffer(r).dtype)), "the bytes of a region of ",
                     buffer(r).name);
}

int64_t Schedule::offset_in_buffer(const Region& r, int64_t ld) const {
  const BufferSpec& spec = buffer(r);
  const int64_t first = spec.order == Order::ColMajor
                            ? checked_mul_add(r.col0, ld, r.row0, "the first element of a region of ", spec.name)
                            : checked_mul_add(r.row0, ld, r.col0, "the first element of a region of ", spec.name);
  return checked_mul(first, static_cast<int64_t>(dtype_size(spec.dtype)), "the byte offset of a region of ",
                     spec.name);
}

int64_t Schedule::offset_from_binding(const Region& r) const {
  const BufferSpec& spec = buffer(r);
  const int64_t in_buffer = offset_in_buffer(r, spec.ld);
  if (r.buffer < kFirstWorkspaceBuffer) return in_buffer;
  return checked_add(spec.offset_bytes, in_buffer, "the workspace offset of a region of ", spec.name);
}

std::vector<bool> Schedule::lanes_that_multiply() const {
  std::vector<bool> multiplies(static_cast<std::size_t>(std::max(compute_lanes, 0)), false);
  for (const Step& step : steps)
    if (step.kind() == StepKind::Gemm && !step.is_comm() && step.lane < compute_lanes)
      multiplies[static_cast<std::size_t>(step.lane)] = true;
  return multiplies;
}

std::string Schedule::step_summary() const {
  std::map<StepKind, int> counts;
  for (const Step& s : steps) counts[s.kind()]++;
  std::string text;
  for (const auto& [kind, count] : counts) {
    if (!text.empty()) text += ", ";
    text += std::to_string(count) + " " + step_kind_name(kind);
  }
  return text.empty() ? "no steps" : text;
}

void require_one_call_gemms(const Schedule& s) {
  for (const Step& step : s.steps) {
    const auto* g = std::get_if<GemmOp>(&step.op);
    if (!g) continue;
    const Order a = s.buffer(g->a).order, b = s.buffer(g->b).order, c = s.buffer(g->c).order;
    if (gemm_is_one_call(g->op_a, a, g->op_b, b, c)) continue;
    const bool a_wrong = g->op_a == Op::C && a != c;
    fail(WEAVE_ERROR_UNSUPPORTED, "step '", step.label, "' multiplies ", a_wrong ? "op(A) = A^H" : "op(B) = B^H",
         " with ", a_wrong ? s.buffer(g->a).name : s.buffer(g->b).name, " stored ",
         order_name(a_wrong ? a : b), " into ", order_name(c), " ", s.buffer(g->c).name,
         ": that needs a conjugate without transpose, which BLAS does not have. Store the matrices in one order "
         "(or pass the operand conjugated with WEAVE_OP_T)");
  }
}

namespace {
std::string format_region(const Schedule& s, const Region& r) {
  std::ostringstream out;
  out << s.buffer(r).name << "[" << r.row0 << ":" << r.row0 + r.rows << "," << r.col0 << ":" << r.col0 + r.cols
      << "]";
  return out.str();
}
}  // namespace

std::string format_schedule(const Schedule& s) {
  std::ostringstream out;
  out << "schedule of group rank " << s.group_rank << "/" << s.group_size << ": " << algorithm_name(s.algorithm)
      << ", " << s.steps.size() << " steps, workspace " << s.workspace_bytes << " bytes\n";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    const Step& step = s.steps[i];
    out << "  " << i << " [" << (step.is_comm() ? std::string("comm") : "lane " + std::to_string(step.lane))
        << (step.batch >= 0 ? ", batch " + std::to_string(step.batch) : std::string()) << "] "
        << step_kind_name(step.kind()) << " ";
    std::visit(
        [&](const auto& op) {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, GemmOp>) {
            out << format_region(s, op.c) << " = " << scalar_name(op.alpha) << "*" << format_region(s, op.a) << "^"
                << op_name(op.op_a) << "*" << format_region(s, op.b) << "^" << op_name(op.op_b) << " + "
                << scalar_name(op.beta) << "*C";
            if (op.has_addend) out << " + " << format_region(s, op.addend);
            if (op.a_scale.scaled()) out << ", A scaled by " << format_region(s, op.a_scale.region);
            if (op.b_scale.scaled()) out << ", B scaled by " << format_region(s, op.b_scale.region);
          } else if constexpr (std::is_same_v<T, EpilogueOp>) {
            out << format_region(s, op.dst) << " = ";
            if (op.has_src) {
              out << scalar_name(op.src_scale) << "*(" << format_region(s, op.src);
              for (const Region& more : op.more_src) out << " + " << format_region(s, more);
              out << ") + ";
            }
            out << scalar_name(op.dst_scale) << "*dst";
            if (op.has_bias) out << " + bias";
            if (op.conjugate_src) out << " (conjugated)";
          } else if constexpr (std::is_same_v<T, SendOp>) {
            out << format_region(s, op.src) << " -> rank " << op.peer << " tag " << op.tag;
          } else if constexpr (std::is_same_v<T, RecvOp>) {
            out << format_region(s, op.dst) << " <- rank " << op.peer << " tag " << op.tag;
          } else if constexpr (std::is_same_v<T, PublishOp>) {
            out << format_region(s, op.src) << " => rank " << op.peer << " tag " << op.tag;
          } else if constexpr (std::is_same_v<T, PeerSumOp>) {
            out << format_region(s, op.dst) << " = " << scalar_name(op.src_scale) << "*(";
            for (std::size_t t = 0; t < op.terms.size(); ++t) {
              const SumTerm& term = op.terms[t];
              out << (t ? " + " : "");
              if (term.remote)
                out << "rank " << term.peer << " tag " << term.tag;
              else
                out << format_region(s, term.local);
            }
            out << ") + " << scalar_name(op.dst_scale) << "*dst";
            if (op.has_bias) out << " + bias";
            if (op.has_copy) out << ", copied to " << format_region(s, op.copy);
          } else if constexpr (std::is_same_v<T, QuantizeOp>) {
            out << format_region(s, op.dst) << " = quantized rows of " << format_region(s, op.src) << "^"
                << op_name(op.op);
            if (op.has_scales) out << ", scales into " << format_region(s, op.scales);
          } else if constexpr (std::is_same_v<T, AwaitReleaseOp>) {
            out << "released by rank " << op.peer << " tag " << op.tag;
          } else if constexpr (std::is_same_v<T, RearrangeOp>) {
            out << format_region(s, op.dst) << " <= " << format_region(s, op.src) << "^" << op_name(op.src_op) << " in "
                << op.rows.size() << " x " << op.cols.size() << " runs (" << op.elements() << " elements)";
          } else {
            out << collective_name(op.kind) << " " << format_region(s, op.send) << " -> "
                << format_region(s, op.recv);
          }
        },
        step.op);
    if (!step.deps.empty()) {
      out << " after";
      for (int d : step.deps) out << " " << d;
    }
    if (!step.label.empty()) out << "  (" << step.label << ")";
    out << "\n";
  }
  return out.str();
}

}  // namespace weave::internal::plan
