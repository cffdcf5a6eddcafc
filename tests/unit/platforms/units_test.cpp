#include "platforms/units.hpp"

#include <gtest/gtest.h>

namespace trainsim::units {
namespace {

TEST(Units, BandwidthDistinguishesBitsFromBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("400Gbps"), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("900GBps"), 900e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("25GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("1GiBps"), 1024.0 * 1024 * 1024);
}

TEST(Units, SizesUseSiAndIecPrefixes) {
  EXPECT_DOUBLE_EQ(parse_bytes("80GiB"), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1.5GB"), 1.5e9);
  EXPECT_DOUBLE_EQ(parse_bytes("512B"), 512);
}

TEST(Units, DurationsFromPicosecondsToDays) {
  EXPECT_DOUBLE_EQ(parse_duration_s("1.5us"), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_duration_s("10ms"), 10e-3);
  EXPECT_DOUBLE_EQ(parse_duration_s("2s"), 2);
  EXPECT_DOUBLE_EQ(parse_duration_s("30min"), 1800);
  EXPECT_DOUBLE_EQ(parse_duration_s("1e-3s"), 1e-3);
}

TEST(Units, RatesAndPower) {
  EXPECT_DOUBLE_EQ(parse_flop_rate("312TFLOPS"), 312e12);
  EXPECT_DOUBLE_EQ(parse_flop_rate("989TFLOP/s"), 989e12);
  EXPECT_DOUBLE_EQ(parse_power_W("1.2kW"), 1200);
}

TEST(Units, MissingUnitIsAnErrorThatShowsExamples) {
  try {
    parse_bandwidth_Bps("300");
    FAIL() << "accepted a bandwidth without a unit";
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("unit is missing"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("400Gbps"), std::string::npos) << e.what();
  }
}

TEST(Units, RejectsNegativeUnknownAndMalformedValues) {
  EXPECT_THROW(parse_bytes("-4GB"), UnitError);
  EXPECT_THROW(parse_bytes("4 furlongs"), UnitError);
  EXPECT_THROW(parse_duration_s("fast"), UnitError);
  EXPECT_THROW(parse_duration_s("1..5us"), UnitError);
  EXPECT_THROW(parse_bandwidth_Bps("nanGbps"), UnitError);
  // A size is not a bandwidth.
  EXPECT_THROW(parse_bandwidth_Bps("80GiB"), UnitError);
}

// "5us" is the double nearest 5e-6, not 5 x 1e-6 (4.9999999999999996e-06,
// which summary.json would then print).
TEST(Units, DecimalPrefixesScaleTheWrittenNumberExactly) {
  EXPECT_EQ(parse_duration_s("5us"), 5e-06);
  EXPECT_EQ(parse_duration_s("1.5us"), 1.5e-06);
  EXPECT_EQ(parse_duration_s("7us"), 7e-06);
  EXPECT_EQ(parse_duration_s("30ns"), 3e-08);
  EXPECT_EQ(parse_duration_s("2.5e3us"), 2.5e-03);
  EXPECT_EQ(parse_duration_s("0.1ms"), 1e-04);
  EXPECT_EQ(parse_bandwidth_Bps("200Gbps"), 25e9);
  EXPECT_EQ(parse_bytes("1.1GB"), 1.1e9);
  EXPECT_EQ(parse_power_W("0.3mW"), 3e-04);
  EXPECT_EQ(format_machine(parse_duration_s("5us")), "5e-06");
}

TEST(Units, SuffixCaseIsFreeExceptBitVersusByte) {
  EXPECT_EQ(parse_bandwidth_Bps("400gbps"), 50e9);
  EXPECT_EQ(parse_bandwidth_Bps("400GBPS"), 400e9);  // B: bytes
  EXPECT_EQ(parse_bandwidth_Bps("400Gb/s"), 50e9);
  EXPECT_EQ(parse_duration_s("10MS"), 10e-3);
  EXPECT_EQ(parse_duration_s("2US"), 2e-6);
  EXPECT_EQ(parse_bytes("80GIB"), 80.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_flop_rate("312tflops"), 312e12);
  EXPECT_EQ(parse_power_W("1.2KW"), 1200);
  // A lower-case b is a bit: not a size.
  try {
    parse_bytes("80Gib");
    FAIL() << "took bits for bytes";
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("a lower-case b is a bit"), std::string::npos) << e.what();
  }
  // mW or MW: the case decides, so it must be written.
  try {
    parse_power_W("3mw");
    FAIL() << "guessed milli or mega";
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("ambiguous"), std::string::npos) << e.what();
  }
}

// nccl-tests' -b / -e sizes: a bare number is bytes, K/M/G powers of 1024.
TEST(Units, MessageSizesFollowNcclTests) {
  EXPECT_EQ(parse_message_size_bytes("8"), 8);
  EXPECT_EQ(parse_message_size_bytes("1M"), 1024.0 * 1024);
  EXPECT_EQ(parse_message_size_bytes("128m"), 128.0 * 1024 * 1024);
  EXPECT_EQ(parse_message_size_bytes("1G"), 1024.0 * 1024 * 1024);
  EXPECT_EQ(parse_message_size_bytes("1MiB"), 1024.0 * 1024);
  EXPECT_EQ(parse_message_size_bytes("1MB"), 1e6);
  EXPECT_THROW(parse_message_size_bytes("1Q"), UnitError);
  EXPECT_THROW(parse_message_size_bytes("-8"), UnitError);
}

TEST(Units, EveryKindHasAValidRangeAndSaysIt) {
  // Denormals and overflows once reached SimGrid (an abort) or trace.json ("dur":inf).
  EXPECT_THROW(parse_latency_s("5e-324h"), UnitError);
  EXPECT_THROW(parse_latency_s("1e308us"), UnitError);
  EXPECT_THROW(parse_latency_s("2h"), UnitError);
  EXPECT_DOUBLE_EQ(parse_latency_s("1h"), 3600);
  EXPECT_DOUBLE_EQ(parse_latency_s("1ps"), 1e-12);
  EXPECT_EQ(parse_latency_s("0us"), 0);
  EXPECT_THROW(parse_duration_s("1e-20s"), UnitError);
  EXPECT_THROW(parse_duration_s("200years"), UnitError);
  EXPECT_DOUBLE_EQ(parse_duration_s("50000h"), 50000 * 3600.0);
  EXPECT_THROW(parse_bandwidth_Bps("1e-320Gbps"), UnitError);
  EXPECT_THROW(parse_bandwidth_Bps("1bps"), UnitError);  // above 1 bit/s
  EXPECT_THROW(parse_bandwidth_Bps("0Gbps"), UnitError);
  EXPECT_THROW(parse_bandwidth_Bps("1PBps"), UnitError);  // below 1 PB/s
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("2bps"), 0.25);
  EXPECT_THROW(parse_bytes("1e308TB"), UnitError);  // the product overflows to inf
  EXPECT_THROW(parse_bytes("2PiB"), UnitError);
  EXPECT_THROW(parse_flop_rate("1e30FLOPS"), UnitError);
  EXPECT_THROW(parse_power_W("2MW"), UnitError);
  try {
    parse_latency_s("1e308us");
  } catch (const UnitError& e) {
    EXPECT_NE(std::string(e.what()).find("out of range (expected a latency of 0 or between 1ps and 1h)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Units, FormattingKeepsThreeSignificantDigits) {
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024 * 1024), "1.5GiB");
  EXPECT_EQ(format_duration(0.504), "504ms");
  EXPECT_EQ(format_bandwidth(229.35e9), "229GB/s");
  // Rounding up to 1000 moves to the next prefix.
  EXPECT_EQ(format_bytes(1023.9 * 1024 * 1024), "1GiB");
  EXPECT_EQ(format_duration(0.9997), "1s");
  EXPECT_EQ(format_duration(1200), "1200s");
  EXPECT_EQ(format_duration(7200), "2h");
}

TEST(NumberFormat, PeopleGetSiPrefixesPercentAndRatios) {
  EXPECT_EQ(format_si(1.609e5, " tokens/s"), "161k tokens/s");
  EXPECT_EQ(format_si(91.3e12, "FLOP/s"), "91.3TFLOP/s");
  EXPECT_EQ(format_si(3795, "J"), "3.79kJ");
  EXPECT_EQ(format_si(0.029, "J"), "29mJ");
  EXPECT_EQ(format_si(0, "J"), "0J");
  EXPECT_EQ(format_percent(0.4016), "40.2%");
  EXPECT_EQ(format_ratio(1.2513), "1.25x");
  EXPECT_EQ(format_count(16), "16");
  EXPECT_EQ(format_count(160900.4), "160900");
}

TEST(NumberFormat, MachinesGetShortestRoundTripAndIntegersAsIntegers) {
  EXPECT_EQ(format_machine(79805700000.0), "79805700000");
  EXPECT_EQ(format_machine(4.0), "4");
  EXPECT_EQ(format_machine(-3.0), "-3");
  EXPECT_EQ(format_machine(0.1), "0.1");
  EXPECT_EQ(format_machine(5e-06), "5e-06");
  EXPECT_EQ(format_machine(0.40160000000000001), "0.4016");
  EXPECT_EQ(format_machine(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_machine(1e300), "1e+300");
  for (double v : {0.1, 1.0 / 3, 2.5e-7, 123456.789, 6.02e23})
    EXPECT_EQ(std::stod(format_machine(v)), v) << format_machine(v);
}

}  // namespace
}  // namespace trainsim::units
