// A plan: one validated, scheduled distributed multiplication with its
// backend, transport and workspace, built once and executed many times.
// Creation is collective and agrees on errors across the grid.
#pragma once

#include <memory>
#include <string>

#include "core/grid.hpp"
#include "core/problem.hpp"
#include "exec/compute_backend.hpp"
#include "exec/executor.hpp"
#include "api/execute_log.hpp"
#include "exec/trace.hpp"
#include "plan/planner.hpp"
#include "plan/schedule.hpp"
#include "transport/transport.hpp"
#include "weave/weave.h"

struct weave_matrix_s;

namespace weave::internal {

class Plan {
 public:
  static std::unique_ptr<Plan> create(const std::shared_ptr<GridState>& grid, const weave_plan_desc_t& desc);
  ~Plan();

  // Collective over the operation's group. A NULL args is reported on every
  // rank of the group like any other bad argument.
  void execute(const weave_execute_args_t* args);
  const std::string& description() const { return description_; }
  weave_plan_info_t info() const;
  void write_trace(const char* path) const;

 private:
  Plan() = default;
  void validate_execute_args(const weave_execute_args_t& args) const;
  void check_outputs_apart(const weave_execute_args_t& args) const;
  void run_and_agree_on_outcome(const weave_execute_args_t& args, bool checked);
  std::string describe() const;
  void log_unread_execute();

  std::shared_ptr<GridState> grid_;  // outlives everything below
  GroupView group_;
  // The plan's own duplicate of the group communicator for the per-execute
  // agreements (arguments, outcome), with its arrival notices.
  std::unique_ptr<AgreementChannel> channel_;
  WaitBounds bounds_;
  Problem problem_;
  plan::Resolved resolved_;
  plan::Schedule schedule_;
  // Shared with the work a failed execute leaves in flight: it owns the
  // workspace that work may still write into.
  std::shared_ptr<exec::ComputeBackend> backend_;
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<exec::Trace> trace_;
  std::unique_ptr<exec::Executor> executor_;
  std::string description_;
  bool failed_ = false;
  // WEAVE_LOG / WEAVE_TRACE (api/execute_log.hpp): this plan's number in the
  // log, its executes so far, and the last one's start where its GPU
  // timestamps are still to be read.
  LogSettings log_;
  int log_id_ = -1;
  int64_t executes_ = 0;
  bool unread_execute_ = false;
  double logged_start_us_ = 0;
};

}  // namespace weave::internal
