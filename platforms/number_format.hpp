#pragma once
// The one number-format policy of trainsim's outputs (docs/outputs.md,
// "Numbers"). Every reporter formats through here:
//  - for people (terminal, tables, plots, HTML): three significant digits
//    with an SI prefix and the unit ("815ms", "14.7GiB", "161k tokens/s",
//    "91.3TFLOP/s"), fractions as percent ("40.2%"), ratios as "1.25x",
//    counts as whole numbers;
//  - for machines (CSV, JSON): full precision, the shortest text that reads
//    back as the same double ("5e-06", "0.1"), and whole numbers as integers
//    ("79805700000", never "7.98057e+10" or "4.0").
#include <string>
#include <string_view>

namespace trainsim::units {

// People. Binary prefixes for bytes, decimal for the rest.
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_s);
std::string format_duration(double seconds);
// `value` with a decimal SI prefix (p, n, u, m, k, M, G, T, P) put before
// `unit`: format_si(1.609e5, " tokens/s") is "161k tokens/s",
// format_si(91.3e12, "FLOP/s") "91.3TFLOP/s", format_si(3795, "J") "3.79kJ".
std::string format_si(double value, std::string_view unit);
// 0.4016 -> "40.2%" (one decimal).
std::string format_percent(double fraction);
// 1.2513 -> "1.25x".
std::string format_ratio(double ratio);
// A count: 16 -> "16", 1.6e5 -> "160000" (no exponent, no decimals).
std::string format_count(double value);

// Machines: the shortest round-trip text, whole numbers below 2^53 as
// integers ("4", "-3", "79805700000"); "nan" / "inf" for non-finite values.
std::string format_machine(double value);

}  // namespace trainsim::units
