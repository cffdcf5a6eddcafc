#pragma once
// Numbers as the text writers put them in files with millions of rows, made
// cheaply but byte for byte as fmt makes them:
//  - `{:.0f}` of a byte count (trace.json): fmt's exact fixed-precision path
//    (format_dragon, some 6,000 instructions a number) is skipped for whole
//    numbers below 2^53, whose digits are the integer's;
//  - units::format_machine (timeline.csv): written into a buffer without a
//    string of its own, and remembered by the number's bits, since a run's
//    records share few distinct times (scale-16k: 1,464 among 1.07M).
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace trainsim::analysis {

// A double written as fmt writes it with `{:.0f}`.
struct Fixed0 {
  double value;
};

// Whether `value` is a whole number that `{:.0f}` writes as its integer
// digits (below 2^53, not -0).
inline bool whole_below_2_53(double value) {
  return value == std::trunc(value) && std::fabs(value) < 9007199254740992.0 &&
         !(value == 0 && std::signbit(value));
}

// units::format_machine(value), appended to `out`.
void append_machine_number(fmt::memory_buffer& out, double value);

// append_machine_number, each distinct number formatted once: up to
// kMaxNumbers are remembered (then formatted each time), so memory stays
// bounded (under 3 MB) whatever the run.
class MachineNumberTexts {
 public:
  void append(fmt::memory_buffer& out, double value);

 private:
  static constexpr std::size_t kMaxNumbers = 1 << 15;
  struct Entry {
    std::uint64_t bits = 0;
    std::uint8_t size = 0;  // 0: empty (a number's text is never empty)
    char text[31] = {};
  };
  void grow();
  std::vector<Entry> table_ = std::vector<Entry>(1 << 12);  // open addressing, a power of 2
  std::size_t used_ = 0;
};

}  // namespace trainsim::analysis

template <>
struct fmt::formatter<trainsim::analysis::Fixed0> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  template <class Context>
  auto format(const trainsim::analysis::Fixed0& x, Context& ctx) const {
    if (trainsim::analysis::whole_below_2_53(x.value)) {
      const fmt::format_int digits(static_cast<long long>(x.value));
      return std::copy(digits.data(), digits.data() + digits.size(), ctx.out());
    }
    return fmt::format_to(ctx.out(), "{:.0f}", x.value);
  }
};
