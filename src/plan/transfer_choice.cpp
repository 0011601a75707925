#include "plan/transfer_choice.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace weave::internal::plan {

std::vector<SmTransferRule> default_sm_transfer_rules() {
  constexpr double kMiB = 1024.0 * 1024.0;
  // AG-GEMM: the SM ring beat the copy engines at 1024 rows over 2 GPUs
  // (8 MiB shards: 1.30 and 1.25 x the limit against 1.49 and 1.31, two
  // runs) and lost from 4096 rows (32 MiB: 1.34 against 1.12). On 4 H200s
  // the range held: copy engines 15-25% slower at 4 MiB shards, the SM ring
  // 5-18% slower at 16 MiB, neither ahead twice at 8 MiB (bf16 and FP8).
  return {{Operation::AgGemm, 0, 16 * kMiB}, {Operation::GemmRs, 0, 0}, {Operation::GemmAr, 0, 0}};
}

double transfer_shard_bytes(const Problem& p) {
  const double rows = static_cast<double>(p.m) / p.group_size;
  // AG-GEMM moves A's rows, the reductions products in C's type (p.dtype).
  if (p.operation == Operation::AgGemm) return rows * static_cast<double>(p.k) * dtype_size(p.a_type);
  return rows * static_cast<double>(p.n) * dtype_size(p.dtype);
}

namespace {
std::string mib(double bytes) { return str(bytes / (1024.0 * 1024.0), " MiB"); }
}  // namespace

TransferChoice choose_transfers(const Problem& p, const std::vector<SmTransferRule>& rules) {
  const double bytes = transfer_shard_bytes(p);
  TransferChoice choice;
  for (const SmTransferRule& rule : rules) {
    if (rule.operation != p.operation) continue;
    if (rule.from_bytes >= rule.below_bytes) {
      choice.why = str("copy engines measured faster than SM-driven transfers for every benchmarked ",
                       operation_name(p.operation), " shape");
      return choice;
    }
    choice.sm_transfers = bytes >= rule.from_bytes && bytes < rule.below_bytes;
    choice.why = str(mib(bytes), " shards, SM-driven transfers measured faster for ", operation_name(p.operation),
                     " from ", mib(rule.from_bytes), " below ", mib(rule.below_bytes));
    if (!choice.sm_transfers)
      choice.why = str(mib(bytes), " shards, outside the ", mib(rule.from_bytes), " to ", mib(rule.below_bytes),
                       " where SM-driven transfers measured faster for ", operation_name(p.operation));
    return choice;
  }
  choice.why = str("no rule for ", operation_name(p.operation));
  return choice;
}

int direct_chunks(const Problem& p, const DirectChunkRule& rule) {
  const double shard = static_cast<double>(p.m) / p.group_size * static_cast<double>(p.n) * dtype_size(p.dtype);
  if (p.operation == Operation::GemmAr && p.group_size == 2 && shard >= rule.pair_all_reduce_four_chunk_bytes) return 4;
  return shard < rule.two_chunk_bytes ? 1 : shard < rule.four_chunk_bytes ? 2 : 4;
}

int one_shot_chunks(const Problem& p) {
  const double shard = static_cast<double>(p.m) / p.group_size * static_cast<double>(p.n) * dtype_size(p.dtype);
  if (shard >= kOneShotEightChunkBytes) return 8;
  return static_cast<int>(std::clamp(std::floor(shard / kOneShotMinPieceBytes), 1.0, 4.0));
}

}  // namespace weave::internal::plan
