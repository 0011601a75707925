// The bytes of one fuzz input, read front to back. Reading past the end
// gives zeros, so every input, however short, decodes into some case; the
// tables that bytes pick from list their common (valid, small) values first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace weave_fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }

  uint64_t u64() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(byte()) << (8 * i);
    return value;
  }

  uint32_t u32() { return static_cast<uint32_t>(u64() & 0xffffffffu); }

  bool flag() { return (byte() & 1) != 0; }

  template <class T, std::size_t N>
  T pick(const T (&table)[N]) {
    return table[byte() % N];
  }

 private:
  const uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace weave_fuzz
