// The UCX transport's message isolation, on hand-made schedules: rank 1
// sends one chunk to rank 0 (other ranks take part in creating transports
// only). Checked:
//   1. a receive cancelled by abandon_outstanding() (what the executor does after a
//      timeout) is never written, even when its message arrives later and
//      the worker keeps progressing;
//   2. that late message does not match the receive of the next execute of
//      the same plan (the execute epoch is in the tag), and the next
//      execute's own message does;
//   3. nor a receive of another plan over the same group (the plan id is in
//      the tag), which gets its own message.
// Usage: mpiexec -n 2 (or more) weave_ucx_transport_test
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/grid.hpp"
#include "exec/bindings.hpp"
#include "plan/schedule.hpp"
#include "transport/ucx/ucx_entry.hpp"
#include "transport/ucx/ucx_tag.hpp"

namespace {

using weave::internal::plan::Region;
using weave::internal::transport::Transport;

int g_rank = 0, g_failures = 0;
constexpr int64_t kElements = 16;  // 128 bytes: an eager message
constexpr double kSentinel = -7.0;

void expect(bool condition, const std::string& what) {
  if (condition) return;
  ++g_failures;
  std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, what.c_str());
}

// The tag layout round-trips (compile time).
static_assert(weave::internal::transport::ucx_tag::sender_of(weave::internal::transport::ucx_tag::make(77, 5, 3, 1234)) == 77);
static_assert(weave::internal::transport::ucx_tag::step_tag_of(weave::internal::transport::ucx_tag::make(77, 5, 3, 1234)) == 1234);
static_assert(weave::internal::transport::ucx_tag::make(1, 2, 3, 4) != weave::internal::transport::ucx_tag::make(1, 2, 4, 4));
static_assert(weave::internal::transport::ucx_tag::make(1, 2, 3, 4) != weave::internal::transport::ucx_tag::make(1, 3, 3, 4));
static_assert(weave::internal::transport::ucx_tag::collective_tag(0, 1) > weave::internal::transport::ucx_tag::kMaxStepTag);

// Rank 0 receives C, rank 1 sends A; every buffer is a kElements x 1 f64 column.
weave::internal::plan::Schedule make_schedule(int rank, int size) {
  weave::internal::plan::Schedule s;
  for (int b = 0; b < weave::internal::plan::kFirstWorkspaceBuffer; ++b) {
    weave::internal::plan::BufferSpec spec;
    spec.name = weave::internal::plan::buffer_name(b);
    spec.rows = kElements;
    spec.cols = 1;
    spec.ld = kElements;
    spec.dtype = weave::internal::DType::F64;
    s.buffers.push_back(spec);
  }
  s.group_size = size;
  s.group_rank = rank;
  const Region column{0, 0, 0, kElements, 1};
  weave::internal::plan::Step step;
  step.lane = weave::internal::plan::kCommLane;
  if (rank == 0) {
    Region c = column;
    c.buffer = weave::internal::plan::kBufferC;
    step.op = weave::internal::plan::RecvOp{c, 1, 5};
    step.label = "receive the test chunk";
    s.steps.push_back(step);
  } else if (rank == 1) {
    step.op = weave::internal::plan::SendOp{column, 0, 5};
    step.label = "send the test chunk";
    s.steps.push_back(step);
  }
  return s;
}

struct Buffers {
  std::vector<double> a = std::vector<double>(kElements), c = std::vector<double>(kElements, kSentinel);
  weave::internal::exec::Bindings bindings(const weave::internal::plan::Schedule& s) {
    weave::internal::exec::Bindings b;
    b.schedule = &s;
    b.user = {a.data(), nullptr, c.data(), nullptr, nullptr};
    return b;
  }
  bool c_is(double first) const {
    for (int64_t i = 0; i < kElements; ++i)
      if (c[i] != first + static_cast<double>(i)) return false;
    return true;
  }
  bool c_untouched() const {
    for (double x : c)
      if (x != kSentinel) return false;
    return true;
  }
};

// Progress and test `request` for `seconds`; whether it finished.
bool completes_within(Transport& t, int request, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    t.progress();
    if (t.test(request)) return true;
    std::this_thread::yield();
  }
  return false;
}

// Rank 1: one execute of `t` that sends first, first + 1, ...
void send_chunk(Transport& t, const weave::internal::plan::Schedule& s, double first) {
  Buffers buffers;
  for (int64_t i = 0; i < kElements; ++i) buffers.a[i] = first + static_cast<double>(i);
  const weave::internal::exec::Bindings b = buffers.bindings(s);
  t.begin_execute();
  const int request = t.post(s.steps.at(0), b);
  expect(completes_within(t, request, 30.0), "a 128-byte send did not complete");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    if (size < 2) throw std::runtime_error("run this test on 2 or more ranks");
    auto grid = weave::internal::GridState::create(MPI_COMM_WORLD, size, 1, [] {});
    const weave::internal::GroupView group = grid->group(WEAVE_GROUP_GRID);
    const weave::internal::plan::Schedule schedule = make_schedule(g_rank, size);
    // Two plans over the same group: they share the group's UCX worker.
    std::unique_ptr<Transport> first = weave::internal::transport::make_ucx_transport(*grid, group, schedule, false);
    std::unique_ptr<Transport> second = weave::internal::transport::make_ucx_transport(*grid, group, schedule, false);
    if (g_rank == 0) std::printf("%s\n", first->name().c_str());

    // 1. A cancelled receive stays unwritten.
    Buffers cancelled;
    if (g_rank == 0) {
      first->begin_execute();
      const int request = first->post(schedule.steps.at(0), cancelled.bindings(schedule));
      expect(!first->test(request), "the receive completed before anything was sent");
      first->abandon_outstanding(nullptr);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 1) send_chunk(*first, schedule, 1.0);  // arrives after the cancel
    MPI_Barrier(MPI_COMM_WORLD);

    // 2. The next execute of the plan: the late message must not match.
    Buffers next;
    int request = -1;
    if (g_rank == 0) {
      first->begin_execute();
      request = first->post(schedule.steps.at(0), next.bindings(schedule));
      expect(!completes_within(*first, request, 0.3),
             "the next execute's receive matched the message of the cancelled execute");
      expect(cancelled.c_untouched(), "the cancelled receive was written after abandon_outstanding()");
      expect(next.c_untouched(), "the next execute's receive was written by the previous execute's message");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 1) send_chunk(*first, schedule, 101.0);
    if (g_rank == 0) {
      expect(completes_within(*first, request, 30.0), "the next execute's own message did not arrive");
      expect(next.c_is(101.0), "the next execute received the wrong data");
      expect(cancelled.c_untouched(), "the cancelled receive was written after abandon_outstanding()");
    }
    MPI_Barrier(MPI_COMM_WORLD);

    // 3. Another plan: its first execute has the epoch of the late message
    //    above, which still waits in UCX; only the plan id tells them apart.
    Buffers other;
    if (g_rank == 0) {
      second->begin_execute();
      request = second->post(schedule.steps.at(0), other.bindings(schedule));
      expect(!completes_within(*second, request, 0.3), "a receive of the second plan matched a message of the first");
      expect(other.c_untouched(), "the second plan's receive was written by the first plan's message");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 1) send_chunk(*second, schedule, 301.0);
    if (g_rank == 0) {
      expect(completes_within(*second, request, 30.0), "the second plan's own message did not arrive");
      expect(other.c_is(301.0), "the second plan received the wrong data");
    }
    MPI_Barrier(MPI_COMM_WORLD);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: FAIL %s\n", g_rank, e.what());
    ++g_failures;
  }
  int failures = 0;
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0)
    std::printf("%s: cancelled receives stay unwritten; executes and plans keep their messages apart\n",
                failures ? "FAILED" : "PASSED");
  MPI_Finalize();
  return failures ? 1 : 0;
}
