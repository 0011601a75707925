#include "plan/environment_syntax.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "core/error.hpp"
#include "plan/transfer_choice.hpp"

namespace weave::internal::plan {

const std::vector<VariableSyntax>& variable_syntax() {
  static const std::vector<VariableSyntax> rows = {
      {"WEAVE_ALGORITHM", {"ring", "sequential", "direct", "pipelined", "hierarchical", "summa"}},
      {"WEAVE_TRANSPORT", {"mpi", "nccl", "ucx", "copy_engine", "sm"}},
      {"WEAVE_CHUNKS", {}, 1, kMaxChunksPerShard},
      {"WEAVE_DIRECTION", {"forward", "backward", "bidirectional"}},
      {"WEAVE_PROGRESS", {"tiles", "thread"}},
      {"WEAVE_COMPUTE_STREAMS", {}, 1, kMaxComputeStreams},
      {"WEAVE_COMM_PRIORITY", {"high", "normal"}},
      {"WEAVE_SM_MARGIN", {}, 0, INT_MAX},
      {"WEAVE_SM_TRANSPORT_CTAS", {}, 1, kSmTransportMaxCtas},
      {"WEAVE_DEVICE_WAIT", {"bounded", "stream"}},
      {"WEAVE_TRANSFER_COMPLETION", {"own_streams", "communication_stream"}},
      {"WEAVE_COPY_ENGINE_SENDS", {"per_receiver", "in_order"}},
      {"WEAVE_CLEAR_TO_SEND", {"at_start", "per_step"}},
      {"WEAVE_ISSUE_ORDER", {"transfers_first", "gemms_first", "alternate"}},
      {"WEAVE_ALL_REDUCE", {"one_shot", "two_shot"}},
      {"WEAVE_ALL_GATHER_LAG", {"after_reduce", "1", "2"}},
      {"WEAVE_OWN_PRODUCT", {"summed", "accumulates"}},
      {"WEAVE_TAIL_BANDS", {}, 1, kMaxTailBands},
      {"WEAVE_PANEL_WIDTH", {}, 1, int64_t{1} << 40},
      {"WEAVE_CALIBRATE", {"1", "0", "model", "time"}},
      {"WEAVE_GEMM_TUNING", {"on", "off"}},
      {"WEAVE_GEMM_BANDS", {}, 0, kMaxGemmBands},
      {"WEAVE_FP8_GEMM", {"cutlass", "cublaslt"}},
      {"WEAVE_CUTLASS_SWIZZLE", {"1", "2", "4", "8"}},
  };
  return rows;
}

const VariableSyntax* syntax_of(const std::string& name) {
  for (const VariableSyntax& row : variable_syntax())
    if (name == row.name) return &row;
  return nullptr;
}

int64_t integer_value(const VariableSyntax& row, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const long long number = std::strtoll(value.c_str(), &end, 10);
  if (!end || end == value.c_str() || *end != '\0' || errno == ERANGE || number < row.minimum || number > row.maximum)
    fail(WEAVE_ERROR_INVALID_VALUE, row.name, "=", value, " is not an integer from ", row.minimum, " to ",
         row.maximum);
  return number;
}

void check_environment_syntax(const Environment& env) {
  for (const auto& [name, value] : env) {
    const VariableSyntax* row = syntax_of(name);
    if (!row) continue;
    if (!row->words.empty()) {
      bool known = false;
      std::string allowed;
      for (const std::string& word : row->words) {
        known = known || word == value;
        allowed += (allowed.empty() ? "" : ", ") + word;
      }
      if (!known) fail(WEAVE_ERROR_INVALID_VALUE, name, "=", value, " is not one of ", allowed);
      continue;
    }
    integer_value(*row, value);
  }
}

}  // namespace weave::internal::plan
