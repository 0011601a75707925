#include "api/execute_log.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>

#include "core/error.hpp"

namespace weave::internal {

namespace {

LogLevel parse_level(const char* text) {
  if (!text || !*text) return LogLevel::Off;
  const std::string level = text;
  if (level == "info") return LogLevel::Info;
  if (level == "debug") return LogLevel::Debug;
  if (level == "trace") return LogLevel::Trace;
  // Warn once per value: a misspelt level would otherwise show nothing and
  // leave the user wondering.
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(level).second)
    std::fprintf(stderr, "weave: WEAVE_LOG=%s is not info, debug or trace; nothing is logged\n", text);
  return LogLevel::Off;
}

std::string expand(const std::string& pattern, const std::string& key, const std::string& value) {
  std::string out = pattern;
  for (std::size_t at = out.find(key); at != std::string::npos; at = out.find(key, at + value.size()))
    out.replace(at, key.size(), value);
  return out;
}

}  // namespace

LogSettings log_settings() {
  LogSettings s;
  s.level = parse_level(std::getenv("WEAVE_LOG"));
  if (const char* path = std::getenv("WEAVE_TRACE")) s.trace_path = path;
  if (const char* last = std::getenv("WEAVE_TRACE_LAST"); last && *last) {
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(last, &end, 10);
    if (errno != 0 || *end != '\0' || n < 1)
      fail(WEAVE_ERROR_INVALID_VALUE, "WEAVE_TRACE_LAST=", last, " is not a number of executes >= 1");
    s.trace_last = n;
  }
  return s;
}

bool log_prints(const LogSettings& settings, int rank) {
  return settings.level == LogLevel::Debug || settings.level == LogLevel::Trace ||
         (settings.level == LogLevel::Info && rank == 0);
}

ExecuteLog& ExecuteLog::instance() {
  static ExecuteLog log;
  return log;
}

int ExecuteLog::add_plan(const std::string& summary) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int id = next_plan_++;
  plans_[id].summary = summary;
  return id;
}

double ExecuteLog::now_us() const { return clock_.now_us(); }

void ExecuteLog::add_execute(const LogSettings& settings, int plan, int rank, int64_t execute, double start_us,
                             double elapsed_ms, const exec::Trace& trace) {
  std::lock_guard<std::mutex> lock(mutex_);
  PlanLog& log = plans_[plan];
  if (log_prints(settings, rank))
    std::fprintf(stderr, "weave[%d]: plan %d execute %lld: %.3f ms (%s)\n", rank, plan,
                 static_cast<long long>(execute), elapsed_ms, log.summary.c_str());
  if (settings.trace_path.empty()) return;
  log.executes.push_back(Execute{execute, start_us, trace});
  while (static_cast<int64_t>(log.executes.size()) > settings.trace_last) log.executes.pop_front();
  write(settings, plan, rank);
}

// The rank's file: the plan's executes (or every plan's, without %p) on the
// process clock, each plan's tracks named after it, and one span per
// execute on the plan's own track.
void ExecuteLog::write(const LogSettings& settings, int plan, int rank) {
  const bool per_plan = settings.trace_path.find("%p") != std::string::npos;
  const std::string file =
      expand(expand(settings.trace_path, "%r", std::to_string(rank)), "%p", std::to_string(plan));
  exec::Trace merged;
  for (const auto& [id, log] : plans_) {
    if (per_plan && id != plan) continue;
    const std::string prefix = "plan " + std::to_string(id);
    for (const Execute& e : log.executes) {
      double end_us = 0;
      for (const exec::TraceSpan& s : e.trace.spans()) end_us = std::max(end_us, s.end_us);
      merged.add_span({-1, prefix, "execute " + std::to_string(e.number) + ": " + log.summary, e.start_us,
                       e.start_us + end_us});
      for (exec::TraceSpan s : e.trace.spans()) {
        s.track = prefix + ": " + s.track;
        s.start_us += e.start_us;
        s.end_us += e.start_us;
        merged.add_span(std::move(s));
      }
    }
  }
  std::ofstream out(file);
  if (!out) {
    static std::set<std::string> warned;
    if (warned.insert(file).second) std::fprintf(stderr, "weave: WEAVE_TRACE: cannot write %s\n", file.c_str());
    return;
  }
  out << merged.to_chrome_json(rank);
}

}  // namespace weave::internal
