// Flags between GPUs, as device code waits for and raises them, shared by
// the bounded-wait kernel and the SM transport's kernels. The types are
// plain C++ (the host fills them in); the functions exist only for nvcc.
//
// A flag is a 32-bit word in a rank's flag block (PeerMappings). The rank
// that raises it writes with release semantics at system scope after a
// fence, so whoever sees the value also sees the data written before it;
// the rank that waits reads with acquire semantics and resets the flag once
// it has seen it, so the same flags serve every execute and graph replay.
#pragma once

#include <cstdint>

namespace weave::internal::transport {

// Where the first wait that gave up tells the host about itself: mapped
// host memory, written once by the device.
struct DeviceWaitRecord {
  uint32_t timed_out;  // set last, once the fields below are written
  int32_t step;
  int32_t peer;
  uint32_t padding;
  uint64_t waited_ns;
};

// What device code needs to bound its waits.
struct DeviceWaitState {
  uint32_t* claimed = nullptr;           // device memory: 0 until a wait gives up
  DeviceWaitRecord* record = nullptr;    // device address of the host-mapped record
  int64_t timeout_ns = -1;               // negative: never give up
};

#if defined(__CUDACC__)

__device__ inline uint64_t global_time_ns() {
  uint64_t now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  return now;
}

__device__ inline uint32_t load_acquire(const uint32_t* flag) {
  uint32_t value = 0;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ inline void store_release(uint32_t* flag, uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

// Whether an earlier wait of the plan has given up (then later ones give up
// at once).
__device__ inline bool wait_given_up(const DeviceWaitState& state) {
  return *reinterpret_cast<volatile const uint32_t*>(state.claimed) != 0;
}

// Records the first wait that gave up; later ones leave the record alone.
__device__ inline void record_timeout(const DeviceWaitState& state, int step, int peer, uint64_t waited_ns) {
  if (atomicCAS(state.claimed, 0u, 1u) != 0u) return;
  volatile DeviceWaitRecord* record = state.record;
  record->step = step;
  record->peer = peer;
  record->waited_ns = waited_ns;
  __threadfence_system();
  record->timed_out = 1u;
  __threadfence_system();
}

// Waits (one thread) until *flag == value or the deadline from `start`
// passes; false when it gave up (recorded) or an earlier wait had.
__device__ inline bool wait_for_flag(const DeviceWaitState& state, const uint32_t* flag, uint32_t value,
                                     uint64_t start, int step, int peer) {
  unsigned sleep_ns = 32;
  while (load_acquire(flag) != value) {
    if (wait_given_up(state)) return false;
    const uint64_t waited = global_time_ns() - start;
    if (state.timeout_ns >= 0 && waited > static_cast<uint64_t>(state.timeout_ns)) {
      record_timeout(state, step, peer, waited);
      return false;
    }
    __nanosleep(sleep_ns);
    if (sleep_ns < 1024) sleep_ns *= 2;
  }
  return true;
}

#endif

}  // namespace weave::internal::transport
