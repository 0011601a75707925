#include "exec/trace.hpp"

#include <map>
#include <sstream>

namespace weave::internal::exec {

Trace::Trace(const Trace& other) {
  std::lock_guard<std::mutex> lock(other.mutex_);
  origin_ = other.origin_;
  spans_ = other.spans_;
}

Trace& Trace::operator=(const Trace& other) {
  if (this == &other) return *this;
  std::scoped_lock lock(mutex_, other.mutex_);
  origin_ = other.origin_;
  spans_ = other.spans_;
  return *this;
}

void Trace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.clear();
  origin_ = std::chrono::steady_clock::now();
}

double Trace::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - origin_).count();
}

void Trace::add(int step, const std::string& track, const std::string& name, double start_us, double end_us) {
  add_span(TraceSpan{step, track, name, start_us, end_us});
}

void Trace::add_span(TraceSpan span) {
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back(std::move(span));
}

namespace {
std::string escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out;
}
}  // namespace

std::string Trace::to_chrome_json(int rank) const {
  std::map<std::string, int> tids;
  for (const TraceSpan& s : spans_) tids.emplace(s.track, static_cast<int>(tids.size()));
  std::ostringstream out;
  out << "{\"traceEvents\":[\n";
  out << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"args\":{\"name\":\"rank " << rank
      << "\"}}";
  for (const auto& [track, tid] : tids)
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" << rank << ",\"tid\":" << tid
        << ",\"args\":{\"name\":\"" << escape(track) << "\"}}";
  for (const TraceSpan& s : spans_)
    out << ",\n{\"name\":\"" << escape(s.name) << "\",\"ph\":\"X\",\"pid\":" << rank << ",\"tid\":" << tids[s.track]
        << ",\"ts\":" << s.start_us << ",\"dur\":" << (s.end_us - s.start_us) << ",\"args\":{\"step\":" << s.step
        << "}}";
  out << "\n]}\n";
  return out.str();
}

}  // namespace weave::internal::exec
