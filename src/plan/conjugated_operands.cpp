// op(X) = X^H where a GEMM cannot apply it. BLAS (and cuBLAS) take a
// conjugate transpose only of an operand stored in its product's order: in
// the other order it would need a conjugate without transpose, which they
// do not have. The reductions' partial sums are row-major whatever the
// caller's A is, so a column-major A with WEAVE_OP_C meets this every time.
// Then the schedule multiplies conj(X) instead, with op T: one element-wise
// step first copies X conjugated into workspace (in X's layout), every step
// that read X reads the copy (after that step), and every op C on X becomes
// T (a rearrangement's too). A pass over X per execute, against a GEMM's
// pass over X per column block of the product. An AG-GEMM's A is always
// handled so under op C: its rows travel, and every rank must send and
// multiply them alike whatever its own GEMMs could take.
#include <algorithm>
#include <variant>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "plan/schedule_builder.hpp"

namespace weave::internal::plan {

namespace {

constexpr int64_t kWorkspaceAlignment = 256;

// Whether a GEMM of `s` takes `buffer` with op C that it cannot apply.
bool needs_conjugated_copy(const Schedule& s, int buffer) {
  for (const Step& step : s.steps) {
    const auto* g = std::get_if<GemmOp>(&step.op);
    if (!g) continue;
    const Order a = s.buffer(g->a).order, b = s.buffer(g->b).order, c = s.buffer(g->c).order;
    if (gemm_is_one_call(g->op_a, a, g->op_b, b, c)) continue;
    if ((g->a.buffer == buffer && g->op_a == Op::C && a != c) ||
        (g->b.buffer == buffer && g->op_b == Op::C && b != c))
      return true;
  }
  return false;
}

// Once A is conjugated, every row an AG-GEMM moves is (its sends and
// collectives read the copy), so every GEMM of rows of A multiplies them
// with op T, received ones as much as its own.
void multiply_gathered_rows_as_transposed(Schedule& s) {
  for (Step& step : s.steps)
    if (auto* g = std::get_if<GemmOp>(&step.op); g && g->op_a == Op::C) g->op_a = Op::T;
}

// Points every read of `from` in `step` at `to`, turning op C on it into T;
// returns whether the step read it.
bool redirect_reads(Step& step, int from, int to) {
  bool reads = false;
  auto redirect = [&](Region& r) {
    if (r.buffer != from) return;
    r.buffer = to;
    reads = true;
  };
  std::visit(
      [&](auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, GemmOp>) {
          if (op.a.buffer == from && op.op_a == Op::C) op.op_a = Op::T;
          if (op.b.buffer == from && op.op_b == Op::C) op.op_b = Op::T;
          redirect(op.a);
          redirect(op.b);
        } else if constexpr (std::is_same_v<T, EpilogueOp>) {
          if (op.has_src) redirect(op.src);
          for (Region& r : op.more_src) redirect(r);
        } else if constexpr (std::is_same_v<T, RearrangeOp>) {
          if (op.src.buffer == from && op.src_op == Op::C) op.src_op = Op::T;
          redirect(op.src);
        } else if constexpr (std::is_same_v<T, SendOp> || std::is_same_v<T, PublishOp>) {
          redirect(op.src);
        } else if constexpr (std::is_same_v<T, CollectiveOp>) {
          redirect(op.send);
        } else if constexpr (std::is_same_v<T, PeerSumOp>) {
          for (SumTerm& t : op.terms)
            if (!t.remote) redirect(t.local);
        }
      },
      step.op);
  return reads;
}

void conjugate_into_workspace(Schedule& s, int buffer, const char* name) {
  // The copy: X's shape and order, tight, at the end of the workspace.
  BufferSpec spec = s.buffers.at(static_cast<std::size_t>(buffer));
  spec.name = str("conj(", name, ")");
  spec.ld = min_leading_dimension(spec.rows, spec.cols, spec.order);
  spec.offset_bytes = s.workspace_bytes;
  const int64_t bytes = checked_mul(checked_mul(spec.rows, spec.cols, "the elements of ", spec.name),
                                    static_cast<int64_t>(dtype_size(spec.dtype)), "the bytes of ", spec.name);
  s.workspace_bytes = checked_add(
      s.workspace_bytes,
      checked_add(bytes, kWorkspaceAlignment - 1, "the aligned bytes of ", spec.name) / kWorkspaceAlignment *
          kWorkspaceAlignment,
      "the plan's workspace bytes (with ", spec.name, ")");
  s.buffers.push_back(spec);
  const int copy = static_cast<int>(s.buffers.size()) - 1;

  // Step 0 makes the copy; every other step moves up by one.
  for (Step& step : s.steps) {
    for (int& d : step.deps) ++d;
    if (redirect_reads(step, buffer, copy)) step.deps.insert(step.deps.begin(), 0);
  }
  Step first;
  EpilogueOp e;
  e.dst = Region{copy, 0, 0, spec.rows, spec.cols};
  e.has_src = true;
  e.src = Region{buffer, 0, 0, spec.rows, spec.cols};
  e.conjugate_src = true;
  first.op = e;
  first.lane = 0;
  first.label = str("conjugate ", name, " (op C as op T of its conjugate)");
  s.steps.insert(s.steps.begin(), std::move(first));
}

// The gathered A (WEAVE_FLAG_GATHERED_OUTPUT) of a schedule that moved A's
// conjugate holds conjugated rows; a last step conjugates it back in place
// (element by element, each read before it is written), after every step.
void conjugate_gathered_back(Schedule& s) {
  const BufferSpec& gathered = s.buffers.at(kBufferGathered);
  Step last;
  EpilogueOp e;
  e.dst = e.src = Region{kBufferGathered, 0, 0, gathered.rows, gathered.cols};
  e.has_src = true;
  e.conjugate_src = true;
  last.op = e;
  last.lane = 0;
  for (int d = 0; d < static_cast<int>(s.steps.size()); ++d) last.deps.push_back(d);
  last.label = "conjugate the gathered A back (its rows travelled conjugated)";
  s.steps.push_back(std::move(last));
}

}  // namespace

void conjugate_operands_where_needed(Schedule& s, const Problem& p, bool gathered_output) {
  const std::pair<int, const char*> operands[] = {{kBufferA, "A"}, {kBufferB, "B"}};
  const bool gathers_a = p.operation == Operation::AgGemm;
  for (const auto& [buffer, name] : operands) {
    const bool gathered = gathers_a && buffer == kBufferA;
    // An AG-GEMM's A rows travel: every rank must decide alike whether they
    // travel conjugated, and a rank's own GEMMs cannot tell (a rank without
    // columns of C has none, the layouts of received rows differ from A's),
    // so op C on A always multiplies A's conjugate there.
    const bool needed = gathered ? p.op_a == Op::C : needs_conjugated_copy(s, buffer);
    if (!needed) continue;
    conjugate_into_workspace(s, buffer, name);
    if (gathered) multiply_gathered_rows_as_transposed(s);
    if (gathered && gathered_output) conjugate_gathered_back(s);
    s.notes += str(" ", name, " conjugated into workspace each execute and multiplied as op T (op C on ", name,
                   gathered ? std::string(", whose rows travel to every rank") :
                              str(" stored ", order_name(buffer == kBufferA ? p.a.order : p.b.order),
                                  ", which a product in the other order cannot take"),
                   ")", gathered && gathered_output ? ", the gathered A conjugated back at the end;" : ";");
  }
}

}  // namespace weave::internal::plan
