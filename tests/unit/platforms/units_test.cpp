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
}

}  // namespace
}  // namespace trainsim::units
