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
  doc.study["parameters"] = ordered_json::array({"plan.tp", "variant"});
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
