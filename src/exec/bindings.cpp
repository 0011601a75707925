#include "exec/bindings.hpp"

#include "core/error.hpp"

namespace weave::internal::exec {

MatrixRef Bindings::resolve(const plan::Region& region) const {
  const plan::BufferSpec& spec = schedule->buffers.at(region.buffer);
  MatrixRef ref;
  ref.rows = region.rows;
  ref.cols = region.cols;
  ref.dtype = spec.dtype;
  ref.order = spec.order;
  ref.ld = spec.ld;
  char* base = nullptr;
  if (region.buffer < plan::kFirstWorkspaceBuffer) {
    base = static_cast<char*>(const_cast<void*>(user[region.buffer]));
    if (region.buffer == plan::kBufferGathered && gathered_ld > 0) ref.ld = gathered_ld;
  } else {
    base = static_cast<char*>(workspace) + spec.offset_bytes;
  }
  if (!base) {
    // Empty regions may come with a null pointer (a rank owning no rows).
    if (region.empty()) return ref;
    fail(WEAVE_ERROR_INTERNAL, "buffer ", spec.name, " is not bound");
  }
  ref.data = base + region.first_element(ref.ld, spec.order) * static_cast<int64_t>(dtype_size(spec.dtype));
  return ref;
}

}  // namespace weave::internal::exec
