// What an executor needs from a compute backend (host BLAS + Kokkos, or
// CUDA streams + cuBLASLt). A backend owns the plan's workspace and its
// lanes: on the host every lane is the calling thread and work runs at once;
// on a GPU each lane is a stream and work is enqueued.
#pragma once

#include <functional>
#include <string>

#include "exec/bindings.hpp"
#include "exec/trace.hpp"
#include "plan/schedule.hpp"

namespace weave::internal::exec {

// Called between GEMM tiles on the host so communication keeps moving.
struct ProgressHook {
  // Empty: no calls, one GEMM. Returns whether transfers are still in flight.
  std::function<bool()> call;
  // Transfers are in flight and move only when called: tiles of the
  // backend's tile size. Otherwise (and once a call says none is left) the
  // calls only keep this rank's peers told that it is working (arrival
  // notices), and far coarser tiles keep the GEMM as fast as one call.
  bool transfers_in_flight = true;
  explicit operator bool() const { return static_cast<bool>(call); }
  bool operator()() const { return call(); }
};

class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  virtual std::string name() const = 0;
  // False: gemm/epilogue have finished when they return.
  virtual bool asynchronous() const = 0;
  virtual void* workspace() = 0;

  // Order the lanes after the caller's stream, and the caller's stream after
  // the lanes (asynchronous backends; no-ops on the host).
  virtual void begin(void* caller_stream) { (void)caller_stream; }
  virtual void end(void* caller_stream) { (void)caller_stream; }

  virtual void gemm(const plan::GemmOp& op, int lane, const Bindings& bindings, const Scalars& scalars,
                    const ProgressHook& progress) = 0;
  virtual void epilogue(const plan::EpilogueOp& op, int lane, const Bindings& bindings,
                        const Scalars& scalars) = 0;
  virtual void quantize(const plan::QuantizeOp& op, int lane, const Bindings& bindings) = 0;
  // Copies the rectangles of a rearrangement (kernels/rearrange.hpp).
  virtual void rearrange(const plan::RearrangeOp& op, int lane, const Bindings& bindings) = 0;

  // Asynchronous backends: one event per step index. `record` marks the end
  // of what is enqueued on `lane` so far; `wait` makes `lane` wait for it;
  // `query` tells whether it has completed. lane may be plan::kCommLane.
  virtual void record(int event, int lane) { (void)event; (void)lane; }
  // The same on a native stream that is not a lane (a transport's own).
  virtual void record_on_stream(int event, void* stream) { (void)event; (void)stream; }
  virtual void wait(int lane, int event) { (void)lane; (void)event; }
  virtual bool query(int event) { (void)event; return true; }
  // The native stream of a lane (cudaStream_t), for stream-ordered transports.
  virtual void* lane_stream(int lane) { (void)lane; return nullptr; }

  // Traces of asynchronous backends: timestamps taken on the device around
  // each step (`end` false before it, true after it, on its lane), read back
  // once the execute has finished. Off unless the plan traces.
  virtual void mark_timing(int step, int lane, bool end) { (void)step, (void)lane, (void)end; }
  virtual void mark_timing_on_stream(int step, void* stream, bool end) { (void)step, (void)stream, (void)end; }
  virtual void collect_timings(Trace& trace, const plan::Schedule& schedule) { (void)trace, (void)schedule; }
};

}  // namespace weave::internal::exec
