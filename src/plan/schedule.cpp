#include "plan/schedule.hpp"

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
          } else if constexpr (std::is_same_v<T, EpilogueOp>) {
            out << format_region(s, op.dst) << " = ";
            if (op.has_src) {
              out << scalar_name(op.src_scale) << "*(" << format_region(s, op.src);
              for (const Region& more : op.more_src) out << " + " << format_region(s, more);
              out << ") + ";
            }
            out << scalar_name(op.dst_scale) << "*dst";
            if (op.has_bias) out << " + bias";
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
          } else if constexpr (std::is_same_v<T, AwaitReleaseOp>) {
            out << "released by rank " << op.peer << " tag " << op.tag;
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
