#pragma once
// The one parser of physical quantities in trainsim. Every input that carries
// a physical quantity goes through here, so "400Gbps", "900GBps", "1.5us" and
// "80GiB" mean the same thing in every file and on the command line.
//
// Conventions (as in SimGrid's xbt_parse_units): a lower-case "b" is a bit,
// an upper-case "B" a byte; SI prefixes (k, M, G, T, P) are powers of 1000,
// IEC prefixes (Ki, Mi, Gi, Ti, Pi) powers of 1024.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "platforms/number_format.hpp"

namespace trainsim::units {

// Thrown for text that is not a quantity of the expected kind; the message
// says what was expected and gives examples, ready to be prefixed with the
// file, line and key by the caller.
class UnitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Every quantity has a valid range, checked here, so that nothing absurd or
// non-finite reaches SimGrid or an output (README "Units and valid ranges").
// A value is either 0 (where the kind allows it) or at least the smallest
// one below: a denormal duration makes SimGrid's solver abort.
inline constexpr double kMinDuration_s = 1e-12;                          // 1 ps
inline constexpr double kMaxLatency_s = 3600;                            // 1 h
inline constexpr double kMaxDuration_s = 100 * 365 * 86400.0;            // 100 years
inline constexpr double kMinBandwidth_Bps = 1 / 8.0;                     // 1 bit/s (exclusive)
inline constexpr double kMaxBandwidth_Bps = 1e15;                        // 1 PB/s (exclusive)
inline constexpr double kMaxBytes = 1024.0 * 1024 * 1024 * 1024 * 1024;  // 1 PiB
inline constexpr double kMaxFlopRate = 1e21;                             // 1 ZFLOP/s
inline constexpr double kMaxPower_W = 1e6;                               // 1 MW

// "80GiB", "1.5GB", "512B", "4KiB". Returns bytes.
double parse_bytes(std::string_view text);
// "400Gbps" (bits per second), "900GBps" or "900GB/s" (bytes per second).
// Returns bytes per second.
double parse_bandwidth_Bps(std::string_view text);
// "1.5us", "10ms", "2s", "30min", "4h", "250ns". Returns seconds.
double parse_duration_s(std::string_view text);
// A latency: a duration of at most kMaxLatency_s.
double parse_latency_s(std::string_view text);
// "312TFLOPS", "989TFLOP/s", "19.5TFLOPs". Returns floating-point ops per second.
double parse_flop_rate(std::string_view text);
// "400W", "1.2kW". Returns watts.
double parse_power_W(std::string_view text);

// A message size as nccl-tests takes it (`-b 8 -e 128M`): a bare number is
// bytes, a K, M, G or T suffix (either case) a power of 1024 as in
// nccl-tests; any other unit goes through parse_bytes ("1MiB", "1.5GB").
double parse_message_size_bytes(std::string_view text);

// The units each parser above accepts (the scenario schema's patterns).
enum class Quantity { bytes, bandwidth, duration, flop_rate, power };
std::vector<std::string_view> unit_suffixes(Quantity quantity);

}  // namespace trainsim::units
