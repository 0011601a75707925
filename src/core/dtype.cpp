#include "core/dtype.hpp"

#include <string>

#include "core/error.hpp"

namespace weave::internal {

const DTypeRow& dtype_row(DType t) {
  const DTypeRow* row = find_dtype_row(static_cast<int>(t));
  if (!row) fail(WEAVE_ERROR_INTERNAL, "element type ", static_cast<int>(t), " has no row in the type table");
  return *row;
}

const char* dtype_enumerators() {
  static const std::string names = [] {
    std::string text;
    for (const DTypeRow& row : kDTypeTable)
      if (is_valid_dtype(static_cast<int>(row.type))) text += (text.empty() ? "" : ", ") + std::string(row.enumerator);
    return text;
  }();
  return names.c_str();
}

const char* scale_mode_name(ScaleMode m) {
  switch (m) {
    case ScaleMode::None: return "unscaled";
    case ScaleMode::Tensor: return "tensor-wise";
    case ScaleMode::RowWise: return "row-wise";
    case ScaleMode::Block1x128: return "1x128 blocks";
    case ScaleMode::Block128x128: return "128x128 blocks";
    case ScaleMode::Mxfp8: return "MXFP8 (1x32 blocks, E8M0)";
  }
  return "?";
}

}  // namespace weave::internal
