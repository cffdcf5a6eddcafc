// The writers' cheap number texts against the formatting they stand for.
#include "analysis/reporters/machine_numbers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

// Whole numbers either side of 2^53, halves (rounded to even by fmt), -0,
// tiny and huge numbers, infinities and NaN, then random bit patterns.
std::vector<double> awkward_numbers() {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> v = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           1.5,
                           2.5,
                           -2.5,
                           0.49999999999999994,
                           469762048.0,
                           1e6,
                           3e6,
                           9007199254740991.0,
                           9007199254740992.0,
                           9007199254740994.0,
                           -9007199254740992.0,
                           1e300,
                           -1e300,
                           4.9e-324,
                           0.0721365954275686,
                           12.78040825064259,
                           inf,
                           -inf,
                           std::nan("")};
  std::mt19937_64 bits(36);
  for (int i = 0; i < 2000; ++i) {
    v.push_back(std::bit_cast<double>(bits()));
    v.push_back(std::ldexp(static_cast<double>(bits() >> 11), -static_cast<int>(bits() % 40)));
  }
  return v;
}

TEST(MachineNumbers, Fixed0WritesWhatFmtWritesWithNoDecimals) {
  for (double x : awkward_numbers())
    EXPECT_EQ(fmt::format("{}", Fixed0{x}), fmt::format("{:.0f}", x)) << fmt::format("{}", x);
}

TEST(MachineNumbers, RememberedTextsAreFormatMachinesWhateverTheNumberOfNumbers) {
  // Every number three times, and more distinct numbers than are
  // remembered: the texts formatted, remembered and past the bound agree.
  std::vector<double> numbers = awkward_numbers();
  for (int i = 0; i < 40000; ++i)
    numbers.push_back(i * 0.001);
  MachineNumberTexts texts;
  for (int pass = 0; pass < 3; ++pass)
    for (double x : numbers) {
      fmt::memory_buffer out;
      out.push_back('|');
      texts.append(out, x);
      EXPECT_EQ(fmt::to_string(out), "|" + units::format_machine(x)) << fmt::format("{}", x);
      fmt::memory_buffer plain;
      append_machine_number(plain, x);
      EXPECT_EQ(fmt::to_string(plain), units::format_machine(x));
    }
}

}  // namespace
}  // namespace trainsim::analysis
