#include "exec/bindings.hpp"

#include "core/error.hpp"

namespace weave::internal::exec {

MatrixRef layout_of(const plan::Schedule& schedule, const plan::Region& region) {
  const plan::BufferSpec& spec = schedule.buffers.at(region.buffer);
  MatrixRef ref;
  ref.rows = region.rows;
  ref.cols = region.cols;
  ref.dtype = spec.dtype;
  ref.order = spec.order;
  ref.ld = spec.ld;
  return ref;
}

MatrixRef Bindings::resolve(const plan::Region& region) const {
  const plan::BufferSpec& spec = schedule->buffers.at(region.buffer);
  MatrixRef ref = layout_of(*schedule, region);
  const bool user_buffer = region.buffer < plan::kFirstWorkspaceBuffer;
  char* base = static_cast<char*>(user_buffer ? const_cast<void*>(user[region.buffer]) : workspace);
  if (region.buffer == plan::kBufferGathered && gathered_ld > 0) ref.ld = gathered_ld;
  if (!base) {
    // Empty regions may come with a null pointer (a rank owning no rows).
    if (region.empty()) return ref;
    fail(WEAVE_ERROR_INTERNAL, "buffer ", spec.name, " is not bound");
  }
  // Offsets are checked arithmetic: plan creation and execute's argument
  // check bounded every buffer's extent, and a wrapped offset must never
  // become a pointer.
  const int64_t offset = ref.ld == spec.ld ? schedule->offset_from_binding(region)
                                           : schedule->offset_in_buffer(region, ref.ld);
  ref.data = base + offset;
  return ref;
}

}  // namespace weave::internal::exec
