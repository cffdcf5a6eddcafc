#include "analysis/reporters/machine_numbers.hpp"

#include <fmt/compile.h>

#include <bit>
#include <iterator>
#include <string>

#include "platforms/number_format.hpp"

namespace trainsim::analysis {

void append_machine_number(fmt::memory_buffer& out, double value) {
  if (std::isnan(value) || std::isinf(value)) {
    const auto text = units::format_machine(value);
    out.append(text.data(), text.data() + text.size());
  } else if (value == std::trunc(value) && std::fabs(value) < 9007199254740992.0) {
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}"), static_cast<long long>(value));
  } else {
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}"), value);
  }
}

namespace {
// splitmix64's finaliser: a double's bits spread over the table's slots.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

void MachineNumberTexts::append(fmt::memory_buffer& out, double value) {
  const auto bits = std::bit_cast<std::uint64_t>(value);
  const std::size_t mask = table_.size() - 1;
  std::size_t at = mix(bits) & mask;
  for (; table_[at].size != 0; at = (at + 1) & mask)
    if (table_[at].bits == bits) {
      out.append(table_[at].text, table_[at].text + table_[at].size);
      return;
    }
  const std::size_t before = out.size();
  append_machine_number(out, value);
  const std::size_t size = out.size() - before;
  if (used_ >= kMaxNumbers || size > sizeof(Entry::text))
    return;
  Entry& e = table_[at];
  e.bits = bits;
  e.size = static_cast<std::uint8_t>(size);
  std::copy(out.data() + before, out.data() + out.size(), e.text);
  if (++used_ * 2 > table_.size())
    grow();
}

void MachineNumberTexts::grow() {
  std::vector<Entry> old(table_.size() * 2);
  old.swap(table_);
  const std::size_t mask = table_.size() - 1;
  for (const Entry& e : old) {
    if (e.size == 0)
      continue;
    std::size_t at = mix(e.bits) & mask;
    while (table_[at].size != 0)
      at = (at + 1) & mask;
    table_[at] = e;
  }
}

}  // namespace trainsim::analysis
