// A MapReader given a key table (platforms/key_table.hpp) checks every
// access against it: the table is what the loader reads, so a reader and a
// table that disagree are an internal error found by the first test that
// reads the key.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <stdexcept>

#include "platforms/key_table.hpp"
#include "platforms/yaml_reader.hpp"

namespace trainsim::platforms {
namespace {

KeyTable table() {
  KeySpec tp;
  tp.name = "tp";
  tp.type = ValueType::integer;
  tp.min = 1;
  tp.max = 64;
  KeySpec schedule;
  schedule.name = "schedule";
  schedule.type = ValueType::choice;
  schedule.words = {"gpipe", "1f1b"};
  return KeyTable{"a plan", {tp, schedule}};
}

enum class Schedule { gpipe, one_f_one_b, zb_h1 };
const std::vector<std::pair<std::string_view, Schedule>> kSchedules = {{"gpipe", Schedule::gpipe},
                                                                       {"1f1b", Schedule::one_f_one_b}};

struct Reading {
  KeyTable keys = table();
  InputSource source{"plan.yaml"};
  ErrorList errors;
  MapReader reader{YAML::Load("{tp: 2, schedule: 1f1b}"), "plan", source, errors, &keys};
};

TEST(KeyTableReader, ReadingAsDeclaredGivesTheValues) {
  Reading r;
  EXPECT_EQ(r.reader.integer("tp", 1, 64), 2);
  EXPECT_EQ(r.reader.choice("schedule", kSchedules), Schedule::one_f_one_b);
  r.reader.finish();
  EXPECT_TRUE(r.errors.empty());
}

TEST(KeyTableReader, AKeyTheTableLacksIsAnInternalError) {
  Reading r;
  EXPECT_THROW(r.reader.integer("pp", 1, 64), std::logic_error);
}

TEST(KeyTableReader, AnotherRangeTypeOrWordsIsAnInternalError) {
  Reading r;
  EXPECT_THROW(r.reader.integer("tp", 1, 128), std::logic_error);
  EXPECT_THROW(r.reader.number("tp", 1, 64), std::logic_error);
  auto more = kSchedules;
  more.emplace_back("zb_h1", Schedule::zb_h1);
  EXPECT_THROW(r.reader.choice("schedule", more), std::logic_error);
}

TEST(KeyTableReader, TheObserverSeesEveryKeyRead) {
  static std::vector<std::string> seen;
  seen.clear();
  observe_key_reads([](const KeyTable&, std::string_view key) { seen.emplace_back(key); });
  Reading r;
  r.reader.integer("tp", 1, 64);
  r.reader.choice("schedule", kSchedules);
  observe_key_reads(nullptr);
  r.reader.integer("tp", 1, 64);
  EXPECT_EQ(seen, (std::vector<std::string>{"tp", "schedule"}));
}

}  // namespace
}  // namespace trainsim::platforms
