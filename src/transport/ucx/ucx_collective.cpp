#include "transport/ucx/ucx_collective.hpp"

#include <cstring>

#include "core/error.hpp"
#include "transport/ucx/ucx_tag.hpp"

namespace weave::internal::transport {

namespace {

std::vector<int64_t> owned_counts(const plan::CollectiveOp& op, int group_size) {
  if (op.kind != plan::CollectiveKind::AllReduce) {
    if (static_cast<int>(op.counts.size()) != group_size)
      fail(WEAVE_ERROR_INTERNAL, plan::collective_name(op.kind), " has ", op.counts.size(), " counts for a group of ",
           group_size);
    return op.counts;
  }
  // All-reduce: P balanced blocks of the whole buffer.
  const int64_t total = op.counts.at(0);
  std::vector<int64_t> counts;
  for (int q = 0; q < group_size; ++q) counts.push_back(total * (q + 1) / group_size - total * q / group_size);
  return counts;
}

// destination[i] = sum over parts in rank order of part[i].
template <class T>
void sum_parts(const std::vector<const char*>& parts, char* destination, int64_t count) {
  T* out = reinterpret_cast<T*>(destination);
  for (int64_t i = 0; i < count; ++i) {
    T value = reinterpret_cast<const T*>(parts[0])[i];
    for (std::size_t p = 1; p < parts.size(); ++p) value += reinterpret_cast<const T*>(parts[p])[i];
    out[i] = value;
  }
}

}  // namespace

int64_t UcxCollective::scratch_bytes(const plan::CollectiveOp& op, DType dtype, int group_size, int group_rank) {
  if (op.kind == plan::CollectiveKind::AllGather) return 0;
  const std::vector<int64_t> counts = owned_counts(op, group_size);
  return (group_size - 1) * counts.at(group_rank) * static_cast<int64_t>(dtype_size(dtype));
}

UcxCollective::UcxCollective(const plan::Step& step, int ordinal, const exec::Bindings& bindings, int group_size,
                             int group_rank, std::byte* scratch)
    : step_(step),
      op_(std::get<plan::CollectiveOp>(step.op)),
      ordinal_(ordinal),
      size_(group_size),
      rank_(group_rank),
      scratch_(scratch) {
  const exec::MatrixRef send = bindings.resolve(op_.send), recv = bindings.resolve(op_.recv);
  send_ = static_cast<char*>(send.data);
  recv_ = static_cast<char*>(recv.data);
  dtype_ = recv.dtype;
  element_size_ = static_cast<int64_t>(dtype_size(dtype_));
  int64_t offset = 0;
  for (int64_t count : owned_counts(op_, size_)) {
    blocks_.push_back(Block{offset, count});
    offset += count;
  }
}

bool UcxCollective::next_phase(UcxMessenger& messenger, std::vector<UcxMessage>& out) {
  const std::size_t posted_before = out.size();
  const int phase = phase_++;
  const Block& mine = blocks_[rank_];
  switch (op_.kind) {
    case plan::CollectiveKind::AllGather:
      if (phase > 0) return true;
      // My part goes where the gathered buffer keeps it, unless it is there.
      if (mine.count > 0 && send_ != element(recv_, mine.offset))
        std::memmove(element(recv_, mine.offset), send_, static_cast<std::size_t>(mine.count * element_size_));
      gather_blocks(messenger, out, recv_, phase);
      break;
    case plan::CollectiveKind::ReduceScatter:
      if (phase == 0) {
        exchange_parts(messenger, out, send_, phase);
      } else {
        sum_my_part(send_, recv_);
        return true;
      }
      break;
    case plan::CollectiveKind::AllReduce:
      if (phase == 0) {
        exchange_parts(messenger, out, recv_, phase);  // in place: send and recv are one buffer
      } else if (phase == 1) {
        sum_my_part(recv_, element(recv_, mine.offset));
        gather_blocks(messenger, out, recv_, phase);
      } else {
        return true;
      }
      break;
  }
  // A phase without messages (one rank, or nothing to move) is over at once.
  if (out.size() == posted_before) return next_phase(messenger, out);
  return false;
}

void UcxCollective::exchange_parts(UcxMessenger& messenger, std::vector<UcxMessage>& out, char* source_base,
                                   int phase) {
  const int tag = ucx_tag::collective_tag(ordinal_, phase);
  const Block& mine = blocks_[rank_];
  const int64_t my_bytes = mine.count * element_size_;
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    const Block& theirs = blocks_[q];
    if (theirs.count > 0)
      out.push_back(messenger.send(q, element(source_base, theirs.offset), theirs.count * element_size_, tag,
                                   step_.label));
    if (my_bytes > 0) {
      const int slot = q < rank_ ? q : q - 1;
      out.push_back(messenger.receive(q, reinterpret_cast<char*>(scratch_) + slot * my_bytes, my_bytes, tag,
                                      step_.label));
    }
  }
}

void UcxCollective::sum_my_part(char* source_base, char* destination) {
  const Block& mine = blocks_[rank_];
  if (mine.count == 0) return;
  const int64_t my_bytes = mine.count * element_size_;
  std::vector<const char*> parts;
  for (int q = 0; q < size_; ++q) {
    if (q == rank_)
      parts.push_back(element(source_base, mine.offset));
    else
      parts.push_back(reinterpret_cast<const char*>(scratch_) + (q < rank_ ? q : q - 1) * my_bytes);
  }
  // Complex elements are summed component by component.
  const int64_t values = mine.count * components(dtype_);
  switch (component_type(dtype_)) {
    case DType::F32: sum_parts<float>(parts, destination, values); break;
    case DType::F64: sum_parts<double>(parts, destination, values); break;
    default:
      fail(WEAVE_ERROR_UNSUPPORTED_TYPE, "the ucx transport sums f32 and f64 partial sums, not ", dtype_name(dtype_));
  }
}

void UcxCollective::gather_blocks(UcxMessenger& messenger, std::vector<UcxMessage>& out, char* base, int phase) {
  const int tag = ucx_tag::collective_tag(ordinal_, phase);
  const Block& mine = blocks_[rank_];
  for (int q = 0; q < size_; ++q) {
    if (q == rank_) continue;
    if (mine.count > 0)
      out.push_back(messenger.send(q, element(base, mine.offset), mine.count * element_size_, tag, step_.label));
    const Block& theirs = blocks_[q];
    if (theirs.count > 0)
      out.push_back(messenger.receive(q, element(base, theirs.offset), theirs.count * element_size_, tag,
                                      step_.label));
  }
}

}  // namespace weave::internal::transport
