// The 64-bit UCX tag of one message. UCX matches a receive against every
// message that reaches the worker, and one worker serves every plan of a
// group, so the tag carries everything that tells two messages apart:
//
//   bits 63..44  sender's rank in the group     (20 bits: groups up to 2^20 ranks)
//   bits 43..28  plan id                         (16 bits: plans of one group)
//   bits 27..20  execute epoch                   (8 bits: executes of one plan)
//   bits 19..0   the message within the execute  (20 bits): a schedule
//                send/receive's own tag (bit 19 clear), or, for messages
//                of a collective step, bit 19 set, which collective of the
//                schedule it is (every rank runs the same collectives in the
//                same order, though at different step indices) and its phase
//
// Receives use the full mask: a message matches only the one receive posted
// for that sender, plan, execute and step. The epoch lets a rank that has
// finished an execute start the next one and send its first chunks while a
// slower peer still has receives of the previous execute posted (which can
// happen with WEAVE_FLAG_NO_EXECUTE_CHECK, up to group size - 1 executes
// apart); the plan id does the same for two plans run one after the other.
#pragma once

#include <cstdint>

namespace weave::internal::transport::ucx_tag {

constexpr int kStepTagBits = 20;
constexpr int kEpochBits = 8;
constexpr int kPlanBits = 16;
constexpr int kSenderBits = 20;
static_assert(kStepTagBits + kEpochBits + kPlanBits + kSenderBits == 64, "the fields fill one 64-bit tag");

constexpr int64_t kCollectiveBit = int64_t{1} << (kStepTagBits - 1);
constexpr int64_t kMaxStepTag = kCollectiveBit - 1;  // largest tag a schedule send/receive may carry
constexpr int64_t kMaxGroupSize = int64_t{1} << kSenderBits;
constexpr uint32_t kPlanIdMask = (uint32_t{1} << kPlanBits) - 1;
constexpr uint32_t kEpochMask = (uint32_t{1} << kEpochBits) - 1;

constexpr uint64_t kFullMask = ~uint64_t{0};

// The message tag of phase `phase` (0 or 1) of the schedule's
// `collective`-th collective step. Between two ranks a phase carries at most
// one message.
constexpr int collective_tag(int collective, int phase) {
  return static_cast<int>(kCollectiveBit | ((int64_t{2} * collective + phase) & kMaxStepTag));
}

// Callers check the ranges (sender < kMaxGroupSize, 0 <= step_tag <= kMaxStepTag
// for schedule tags) when the plan is created; plan id and epoch wrap around.
constexpr uint64_t make(int sender, uint32_t plan_id, uint32_t epoch, int step_tag) {
  return (static_cast<uint64_t>(sender) << (kPlanBits + kEpochBits + kStepTagBits)) |
         (static_cast<uint64_t>(plan_id & kPlanIdMask) << (kEpochBits + kStepTagBits)) |
         (static_cast<uint64_t>(epoch & kEpochMask) << kStepTagBits) | static_cast<uint64_t>(step_tag);
}

constexpr int sender_of(uint64_t tag) { return static_cast<int>(tag >> (kPlanBits + kEpochBits + kStepTagBits)); }
constexpr int step_tag_of(uint64_t tag) {
  return static_cast<int>(tag & ((uint64_t{1} << kStepTagBits) - 1));
}

}  // namespace weave::internal::transport::ucx_tag
