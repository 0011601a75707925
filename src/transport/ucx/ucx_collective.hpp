// The sequential algorithm's collectives over UCX point-to-point messages,
// in host memory. Every rank talks to every other directly (P - 1 messages
// each way per phase), which moves the fewest bytes and suits the group
// sizes one operation runs over; its latency grows with P.
//   all-gather:     my part to everyone, everyone's part into place;
//   reduce-scatter: part q to rank q; the P - 1 incoming copies of my part
//                   land in scratch and are summed in rank order;
//   all-reduce:     a reduce-scatter over P balanced blocks of the buffer,
//                   then an all-gather of the summed blocks, so every rank
//                   ends with the same bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/bindings.hpp"
#include "plan/schedule.hpp"
#include "transport/ucx/ucx_message.hpp"

namespace weave::internal::transport {

class UcxCollective {
 public:
  // `ordinal`: which collective of the schedule this is (0, 1, ...).
  // `scratch` holds scratch_bytes(...) bytes for this collective.
  UcxCollective(const plan::Step& step, int ordinal, const exec::Bindings& bindings, int group_size,
                int group_rank, std::byte* scratch);

  // Bytes of scratch the collective needs: room for P - 1 incoming parts.
  static int64_t scratch_bytes(const plan::CollectiveOp& op, DType dtype, int group_size, int group_rank);

  // Posts the next phase's messages into `out`, after doing the local work
  // the finished phase left (copies, sums). Call it once to start, then each
  // time every message it posted has finished. Returns true when the
  // collective is complete.
  bool next_phase(UcxMessenger& messenger, std::vector<UcxMessage>& out);

 private:
  struct Block {
    int64_t offset = 0, count = 0;  // elements
  };
  char* element(char* base, int64_t index) const { return base + index * element_size_; }
  void exchange_parts(UcxMessenger& messenger, std::vector<UcxMessage>& out, char* source_base, int phase);
  void sum_my_part(char* source_base, char* destination);
  void gather_blocks(UcxMessenger& messenger, std::vector<UcxMessage>& out, char* base, int phase);

  const plan::Step& step_;
  const plan::CollectiveOp& op_;
  int ordinal_ = 0;
  int size_ = 1, rank_ = 0;
  DType dtype_ = DType::F64;
  int64_t element_size_ = 8;
  char* send_ = nullptr;
  char* recv_ = nullptr;
  std::byte* scratch_ = nullptr;
  std::vector<Block> blocks_;  // what each rank owns: its part or its block
  int phase_ = 0;
};

}  // namespace weave::internal::transport
