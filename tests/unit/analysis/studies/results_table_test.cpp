#include "analysis/studies/results_table.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

ordered_json summary(double iteration_time_s, int gpus) {
  return ordered_json::parse(R"({"schema": "trainsim.summary/1", "trainsim_version": "0.1.0",
    "scenario": "s", "cluster": {"gpus": )" +
                             std::to_string(gpus) + R"(, "groups": [{"gpu": "A100"}]},
    "plan": {"dp": 2, "tp": 1}, "iteration_time_s": )" +
                             std::to_string(iteration_time_s) + R"(,
    "tokens_per_s": 4096.0, "mfu": 0.5, "stages": [{"stage": 0}], "gpus": [{"gpu": 0}]})");
}

ResultsDocument study() {
  ResultsDocument doc;
  doc.study["name"] = "t";
  doc.study["file"] = "t.yaml";
  doc.study["id"] = "0123456789abcdef";
  doc.study["points"] = 3;
  doc.study["parameters"] = ordered_json::array({"plan.tp", "variant"});
  doc.study["plots"] = ordered_json::array();
  ResultRow ok;
  ok.point = "0000";
  ok.status = kStatusOk;
  ok.parameters["plan.tp"] = 1;
  ok.parameters["variant"] = "a,b \"quoted\"";
  ok.figures = flatten_summary(summary(2.0, 4));
  ResultRow dropped;
  dropped.point = "0001";
  dropped.status = kStatusDropped;
  dropped.parameters["plan.tp"] = 3;
  dropped.parameters["variant"] = "x";
  dropped.reason = "invalid_plan: s.yaml:3:7: plan.tp: no";
  ResultRow failed;
  failed.point = "0002";
  failed.status = kStatusFailed;
  failed.parameters["plan.tp"] = 2;
  failed.parameters["variant"] = "y";
  failed.exit_status = 2;
  failed.reason = "boom";
  failed.figures["late_figure"] = 1.5;  // a figure only a later row has
  doc.rows = {failed, ok, dropped};
  sort_rows(doc.rows);
  return doc;
}

TEST(ResultsTable, FlattenKeepsEveryScalarWithDottedNamesAndSkipsArraysAndStamps) {
  const auto f = flatten_summary(summary(2.0, 4));
  EXPECT_FALSE(f.contains("schema"));
  EXPECT_FALSE(f.contains("trainsim_version"));
  EXPECT_FALSE(f.contains("stages"));
  EXPECT_FALSE(f.contains("cluster.groups"));
  EXPECT_EQ(f["cluster.gpus"], 4);
  EXPECT_EQ(f["plan.dp"], 2);
  EXPECT_DOUBLE_EQ(f["iteration_time_s"].get<double>(), 2.0);
  // Derived per-GPU throughput, right after tokens_per_s.
  EXPECT_DOUBLE_EQ(f["tokens_per_s_per_gpu"].get<double>(), 1024.0);
  std::vector<std::string> keys;
  for (const auto& [k, v] : f.items())
    keys.push_back(k);
  const auto pos = std::find(keys.begin(), keys.end(), "tokens_per_s");
  ASSERT_NE(pos, keys.end());
  EXPECT_EQ(*(pos + 1), "tokens_per_s_per_gpu");
}

TEST(ResultsTable, ParameterValuesAreNumbersWhenTheTextIsOne) {
  EXPECT_EQ(parameter_value("16"), 16);
  EXPECT_TRUE(parameter_value("16").is_number_integer());
  EXPECT_DOUBLE_EQ(parameter_value("0.5").get<double>(), 0.5);
  EXPECT_EQ(parameter_value("auto"), "auto");
  EXPECT_EQ(parameter_value("400Gbps"), "400Gbps");
  EXPECT_EQ(parameter_value("1f1b"), "1f1b");
  EXPECT_EQ(parameter_value("inf"), "inf");
  EXPECT_EQ(parameter_value(""), "");
}

TEST(ResultsTable, ColumnsArePointStatusParametersFiguresInFirstAppearanceThenExitStatusAndReason) {
  const auto doc = study();
  const auto columns = result_columns(doc);
  ASSERT_GE(columns.size(), 6u);
  EXPECT_EQ(columns[0], "point");
  EXPECT_EQ(columns[1], "status");
  EXPECT_EQ(columns[2], "plan.tp");
  EXPECT_EQ(columns[3], "variant");
  EXPECT_EQ(columns[4], "scenario");  // first figure of row 0000
  EXPECT_EQ(columns[columns.size() - 3], "late_figure");
  EXPECT_EQ(columns[columns.size() - 2], "exit_status");
  EXPECT_EQ(columns.back(), "reason");
  // A figure named like a parameter is not repeated.
  EXPECT_EQ(std::count(columns.begin(), columns.end(), "plan.tp"), 1);
}

TEST(ResultsTable, CsvQuotesTextWithCommasAndQuotesAndLeavesMissingCellsEmpty) {
  std::ostringstream csv;
  write_results_csv(csv, study());
  std::istringstream lines(csv.str());
  std::string header, row0, row1, row2, extra;
  std::getline(lines, header);
  std::getline(lines, row0);
  std::getline(lines, row1);
  std::getline(lines, row2);
  EXPECT_FALSE(std::getline(lines, extra));
  EXPECT_EQ(header.rfind("point,status,plan.tp,variant,scenario,", 0), 0u) << header;
  EXPECT_EQ(row0.rfind("0000,ok,1,\"a,b \"\"quoted\"\"\",s,", 0), 0u) << row0;
  EXPECT_EQ(row1.rfind("0001,dropped,3,x,,", 0), 0u) << row1;
  EXPECT_NE(row1.find(",,invalid_plan: s.yaml:3:7: plan.tp: no"), std::string::npos) << row1;
  EXPECT_NE(row2.find(",1.5,2,boom"), std::string::npos) << row2;
}

TEST(ResultsTable, JsonRoundTripIsByteIdentical) {
  auto doc = study();
  doc.shard = ShardInfo{1, 3};
  std::ostringstream first;
  write_results_json(first, doc);
  std::istringstream in(first.str());
  const auto back = read_results_json(in);
  ASSERT_TRUE(back.shard);
  EXPECT_EQ(back.shard->index, 1);
  EXPECT_EQ(back.shard->count, 3);
  ASSERT_EQ(back.rows.size(), 3u);
  EXPECT_EQ(back.rows[0].parameters["variant"], "a,b \"quoted\"");
  EXPECT_EQ(back.rows[2].exit_status, 2);
  EXPECT_EQ(back.rows[1].reason, "invalid_plan: s.yaml:3:7: plan.tp: no");
  std::ostringstream second;
  write_results_json(second, back);
  EXPECT_EQ(first.str(), second.str());
  std::ostringstream csv1, csv2;
  write_results_csv(csv1, doc);
  write_results_csv(csv2, back);
  EXPECT_EQ(csv1.str(), csv2.str());
}

TEST(ResultsTable, ReadingSomethingElseIsAClearError) {
  std::istringstream not_json("{");
  EXPECT_THROW(read_results_json(not_json), ResultsFormatError);
  std::istringstream summary_file(R"({"schema": "trainsim.summary/1"})");
  try {
    read_results_json(summary_file);
    FAIL();
  } catch (const ResultsFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("trainsim.results/1"), std::string::npos);
  }
}

std::vector<std::string> format_problems(const std::string& text) {
  try {
    parse_results_json(text);
  } catch (const ResultsFormatError& e) {
    return e.problems();
  }
  return {};
}

std::string results_json(const std::string& study, const std::string& rest) {
  return R"({"schema": "trainsim.results/1", "trainsim_version": "0.1.0", "study": )" + study + rest + "}";
}

const std::string kStudy =
    R"({"name": "s", "file": "s.yaml", "id": "1", "points": 2, "parameters": ["plan.tp"], "plots": []})";

TEST(ResultsTable, StrictReadingNamesEveryWrongFieldOfTheStudyAndTheShard) {
  const auto problems = format_problems(results_json(
      R"({"name": 3, "file": "s.yaml", "points": -1, "parameters": [1], "plots": {}, "extra": 1})",
      R"(, "shard": {"index": 2, "count": 2}, "columns": [], "rows": [], "more": true)"));
  const std::vector<std::string> expected{
      "more: unknown key (expected schema, trainsim_version, study, shard, columns, rows)",
      "study.extra: unknown key (expected name, description, file, id, points, parameters, plots)",
      "study.name: a number 3, expected text",
      "study.id: missing (expected text)",
      "study.points: -1 is out of range (expected a whole number from 0 to 1000000)",
      "study.parameters[0]: a number 1, expected text",
      "study.plots: an object {}, expected a list of plots",
      "shard.index: 2 is not below shard.count 2"};
  EXPECT_EQ(problems, expected);
}

TEST(ResultsTable, StrictReadingNamesEveryWrongFieldOfTheRows) {
  const auto problems = format_problems(results_json(kStudy, R"(, "columns": [], "rows": [
      {"point": "0000", "status": "done"},
      {"point": "7", "status": "ok"},
      {"point": "0001", "status": "failed", "exit_status": 1e3, "reason": 4, "plan.tp": {"a": 1}},
      3])"));
  const std::vector<std::string> expected{
      "rows: 4 rows for a study of 2 points",
      "rows[0].status: text \"done\", expected ok, failed or dropped",
      "rows[1].point: point 7 of a study of 2 points",
      "rows[2].exit_status: a number 1000.0, expected a whole number from 0 to 255",
      "rows[2].reason: a number 4, expected text",
      "rows[2].plan.tp: an object {\"a\":1}, expected a number, text, true, false or null",
      "rows[3]: a number 3, expected a row (an object with point, status, ...)"};
  EXPECT_EQ(problems, expected);
}

TEST(ResultsTable, APlotSpecIsCheckedAndItsFileMustStayInThePlotsFolder) {
  const auto problems = format_problems(results_json(
      R"({"name": "s", "file": "s.yaml", "id": "1", "points": 1, "parameters": [],
          "plots": [{"x": "a", "y": 2, "lines": "b", "where": {"c": [1]}, "log_x": 1, "file": "../x.svg",
                     "colour": "red"}, 5]})",
      R"(, "columns": [], "rows": [])"));
  const std::vector<std::string> expected{
      "study.plots[0].colour: unknown key (expected x, y, lines, where, log_x, log_y, title, file)",
      "study.plots[0].y: a number 2, expected text",
      "study.plots[0].lines: text \"b\", expected a list of texts",
      "study.plots[0].where.c: a list [1], expected a number, text, true, false or null",
      "study.plots[0].log_x: a number 1, expected true or false",
      "study.plots[0].file: text \"../x.svg\", expected a plain file name ending in .svg",
      "study.plots[1]: a number 5, expected a plot (an object with x, y, lines, ...)"};
  EXPECT_EQ(problems, expected);
}

TEST(ResultsTable, ShardCountsAndPointsBeyondAStudyAreRefusedNotConverted) {
  const auto problems = format_problems(results_json(
      R"({"name": "s", "file": "s.yaml", "id": "1", "points": 18446744073709551615, "parameters": [],
          "plots": []})",
      R"(, "shard": {"index": 0, "count": 4294967296}, "columns": [], "rows": [])"));
  ASSERT_EQ(problems.size(), 2u) << ::testing::PrintToString(problems);
  EXPECT_EQ(problems[0],
            "study.points: 18446744073709551615 is out of range (expected a whole number from 0 to "
            "1000000)");
  EXPECT_EQ(problems[1],
            "shard.count: 4294967296 is out of range (expected a whole number from 1 to 1000000)");
}

TEST(ResultsTable, RowsSortByPointNumber) {
  std::vector<ResultRow> rows(3);
  rows[0].point = "10";
  rows[1].point = "0002";
  rows[2].point = "0009";
  sort_rows(rows);
  EXPECT_EQ(rows[0].point, "0002");
  EXPECT_EQ(rows[1].point, "0009");
  EXPECT_EQ(rows[2].point, "10");
}

}  // namespace
}  // namespace trainsim::analysis
