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
  // 0: this wait's own deadline passed; r + 1: it stopped because group
  // rank r had given up first (the alarm below).
  uint32_t alarm_from;
  uint64_t waited_ns;
};

// What device code needs to bound its waits.
//
// The alarm: a rank whose wait gave up still runs the rest of its streams
// (that is how they drain), so its later copies and flags reach its peers
// with data that never arrived, into slots whose clear to send it no longer
// waited for. A peer that then saw its flags raised would finish the
// execute as if nothing had happened, with wrong results and a plan that
// reports success. So a wait that gives up first writes an alarm word in
// every peer's flag block (and only then lets its stream go on), and every
// wait, also one whose flag is already up, fails once its own alarm word is
// set: what reached this rank after a peer gave up is not trusted.
struct DeviceWaitState {
  uint32_t* claimed = nullptr;           // device memory: 0 until a wait gives up
  DeviceWaitRecord* record = nullptr;    // device address of the host-mapped record
  int64_t timeout_ns = -1;               // negative: never give up
  uint32_t* alarm = nullptr;             // this rank's alarm word (peers write it); null: none
  uint32_t* const* peer_alarms = nullptr;  // device array: the other ranks' alarm words, mapped
  int peer_count = 0;
  int rank = -1;                         // this rank in the group
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

// The alarm word's value: r + 1 once group rank r (or a rank it heard the
// alarm from) gave up; 0 while none has.
__device__ inline uint32_t alarm_raised(const DeviceWaitState& state) {
  return state.alarm ? load_acquire(state.alarm) : 0u;
}

// Writes the alarm into every peer's word, fenced, before the caller lets
// its stream go on: whatever this rank sends or raises after it comes
// after the alarm for whoever sees it. Repeated by every wait that fails,
// so a stream whose wait gave up at once (another stream's wait had given
// up) sounds it too before its own copies run.
__device__ inline void sound_alarm(const DeviceWaitState& state) {
  if (!state.peer_alarms) return;
  uint32_t origin = alarm_raised(state);
  if (origin == 0u) origin = static_cast<uint32_t>(state.rank + 1);
  for (int i = 0; i < state.peer_count; ++i) store_release(state.peer_alarms[i], origin);
  __threadfence_system();
}

// Records the first wait that gave up; later ones leave the record alone.
__device__ inline void record_timeout(const DeviceWaitState& state, int step, int peer, uint64_t waited_ns,
                                      uint32_t alarm_from) {
  if (atomicCAS(state.claimed, 0u, 1u) != 0u) return;
  volatile DeviceWaitRecord* record = state.record;
  record->step = step;
  record->peer = peer;
  record->alarm_from = alarm_from;
  record->waited_ns = waited_ns;
  __threadfence_system();
  record->timed_out = 1u;
  __threadfence_system();
}

// Waits (one thread) until *flag == value or the deadline from `start`
// passes; false when it gave up (recorded), an earlier wait of this rank
// had, or a peer had (the alarm; checked after the flag too: a rank that
// gave up raises its flags all the same).
__device__ inline bool wait_for_flag(const DeviceWaitState& state, const uint32_t* flag, uint32_t value,
                                     uint64_t start, int step, int peer) {
  unsigned sleep_ns = 32;
  bool up = false;
  while (!(up = load_acquire(flag) == value)) {
    if (wait_given_up(state) || alarm_raised(state) != 0u) break;
    const uint64_t waited = global_time_ns() - start;
    if (state.timeout_ns >= 0 && waited > static_cast<uint64_t>(state.timeout_ns)) {
      record_timeout(state, step, peer, waited, 0u);
      sound_alarm(state);
      return false;
    }
    __nanosleep(sleep_ns);
    if (sleep_ns < 1024) sleep_ns *= 2;
  }
  const uint32_t alarm = alarm_raised(state);
  if (up && alarm == 0u) return true;
  if (alarm != 0u) record_timeout(state, step, peer, global_time_ns() - start, alarm);
  sound_alarm(state);
  return false;
}

#endif

}  // namespace weave::internal::transport
