// `trainsim validate` end to end on a few cheap rows: the table, the MAPE
// lines, the CSV output, the --max-mape exit status and bad input.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

const char* kHeader =
    "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
    "sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),set\n";

// Three 3.6B rows of vTrain's ground_truth_multi.csv (64 A100s).
std::string three_rows() {
  return std::string("# three rows of vTrain's ground_truth_multi.csv\n") + kHeader +
         "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5,fit\n"
         "3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2,check\n"
         "3.6,64,512,4,3072,32,30,2048,1,32,2,4382.1,check\n";
}

TEST(ValidateCli, PrintsEveryRowAndTheMapeOfEachSet) {
  const auto csv = write_temp_file("rows.csv", three_rows());
  const auto out_csv = fresh_dir("validate-out") / "results.csv";
  const auto r = run_cli({"validate", csv.string(), "-j", "2", "--csv", out_csv.string()});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("measured_ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3566.5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4382.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MAPE fit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 2 rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MAPE all"), std::string::npos) << r.out;
  const auto results = read_file(out_csv);
  EXPECT_EQ(std::count(results.begin(), results.end(), '\n'), 4) << results;
  EXPECT_EQ(results.rfind("line,set,gpus,tp,dp,pp,micro_batch,measured_ms,predicted_ms,error_percent\n", 0),
            0u);
}

TEST(ValidateCli, SubsetAndParallelismDoNotChangeThePredictions) {
  const auto csv = write_temp_file("rows.csv", three_rows());
  const auto all = run_cli({"validate", csv.string(), "-j", "1"});
  const auto check = run_cli({"validate", csv.string(), "-j", "3", "--subset", "check"});
  ASSERT_EQ(all.status, 0) << all.err;
  ASSERT_EQ(check.status, 0) << check.err;
  // The check rows' lines are identical in both runs (deterministic replays).
  for (const std::string measured : {"3975.2", "4382.1"}) {
    auto line_of = [&](const std::string& out) {
      const auto at = out.find(measured);
      const auto begin = out.rfind('\n', at) + 1;
      return out.substr(begin, out.find('\n', at) - begin);
    };
    EXPECT_EQ(line_of(all.out), line_of(check.out));
  }
  EXPECT_EQ(check.out.find("3566.5"), std::string::npos);
}

// --set changes the template for every row; the keys a row sets keep the
// row's values.
TEST(ValidateCli, SetOverridesTheTemplateButNotTheKeysARowSets) {
  const auto csv = write_temp_file(
      "rows.csv", std::string(kHeader) + "3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2,check\n");
  auto predicted = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"validate", csv.string(), "-j", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    const auto at = r.out.find("3975.2");  // the tp 2 row
    return r.out.substr(at, r.out.find('\n', at) - at);
  };
  const auto plain = predicted({});
  EXPECT_EQ(predicted({"--set", "plan.tp=8"}), plain);
  EXPECT_NE(predicted({"--set", "plan.sequence_parallel=true", "--set", "plan.tp_comm_overlap=true"}), plain);
  const auto bad = run_cli({"validate", csv.string(), "--set", "plan.tp_comm_overlap=true"});
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_NE(bad.err.find("plan.tp_comm_overlap: true without sequence parallelism"), std::string::npos)
      << bad.err;
}

// plan.tp_comm_overlap: torch_async (PyTorch's async TP) is a third way,
// neither the serial collectives nor Transformer Engine's userbuffers, and
// the CLI refuses it, exit 1, naming the key and the fix, where it cannot
// run: without sequence parallelism, or in eager PyTorch.
TEST(ValidateCli, TorchAsyncTpIsItsOwnOverlapAndIsRefusedWhereItCannotRun) {
  const auto csv = write_temp_file(
      "rows.csv", std::string(kHeader) + "3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2,check\n");
  auto predicted = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"validate", csv.string(), "-j",
                                  "1",        "--set",      "plan.sequence_parallel=true"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    const auto at = r.out.find("3975.2");
    return at == std::string::npos ? std::string() : r.out.substr(at, r.out.find('\n', at) - at);
  };
  const auto serial = predicted({});
  const auto userbuffers = predicted({"--set", "plan.tp_comm_overlap=true"});
  const auto torch_async = predicted({"--set", "plan.tp_comm_overlap=torch_async"});
  ASSERT_FALSE(torch_async.empty());
  EXPECT_NE(torch_async, serial);
  EXPECT_NE(torch_async, userbuffers);
  const auto no_sp = run_cli({"validate", csv.string(), "--set", "plan.tp_comm_overlap=torch_async"});
  EXPECT_EQ(no_sp.status, 1) << no_sp.out;
  EXPECT_NE(no_sp.err.find("plan.tp_comm_overlap: torch_async without sequence parallelism"),
            std::string::npos)
      << no_sp.err;
  EXPECT_NE(no_sp.err.find("expected sequence_parallel: true"), std::string::npos) << no_sp.err;
  const auto eager = run_cli({"validate", csv.string(), "--set", "plan.sequence_parallel=true", "--set",
                              "plan.tp_comm_overlap=torch_async", "--set", "plan.framework=pytorch_fsdp2",
                              "--set", "plan.zero_stage=3"});
  EXPECT_EQ(eager.status, 1) << eager.out;
  EXPECT_NE(eager.err.find("plan.tp_comm_overlap: torch_async with framework pytorch_fsdp2"),
            std::string::npos)
      << eager.err;
}

// --metric compares an MFU of summary.json with the dataset's `MFU (%)`
// column: the same replay, so the row's predicted MFUs stand in the ratio
// of their definitions' FLOPs (mfu_6n / mfu = 6N / trainsim's model FLOPs).
TEST(ValidateCli, MetricComparesTheChosenMfuWithTheMeasuredOne) {
  const auto csv = write_temp_file(
      "rows.csv", std::string("# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
                              "sequence length,tensor parallelism,data parallelism,pipeline parallelism,"
                              "iteration time (ms),MFU (%)\n") +
                      "64,512,8,3072,32,30,2048,1,64,1,3566.5,40\n");
  auto predicted = [&](const std::string& metric) {
    const auto out_csv = fresh_dir("validate-metric") / "results.csv";
    const auto r = run_cli({"validate", csv.string(), "--metric", metric, "--csv", out_csv.string()});
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("measured_" + metric), std::string::npos) << r.out;
    const auto results = read_file(out_csv);
    EXPECT_EQ(results.rfind("line,set,gpus,tp,dp,pp,micro_batch,measured_" + metric + "_percent,predicted_" +
                                metric + "_percent,error_percent\n",
                            0),
              0u)
        << results;
    // The row: ...,measured,predicted,error
    const auto row = results.substr(results.find('\n') + 1);
    std::vector<std::string> cells;
    std::stringstream in(row);
    for (std::string cell; std::getline(in, cell, ',');)
      cells.push_back(cell);
    EXPECT_EQ(cells.size(), 10u) << row;
    EXPECT_EQ(cells.at(7), "40") << row;
    return std::stod(cells.at(8));
  };
  const double mfu = predicted("mfu"), six_n = predicted("mfu_6n"), nvidia = predicted("mfu_nvidia");
  EXPECT_GT(mfu, 1);
  // GPT 3.6B (h 3072, 30 layers, s 2048, V 51200, tied, learned positions):
  // trainsim's FLOPs per token 72 L h^2 (1 + s / 6h + V / 12 L h) =
  // 20,384,317,440 + 2,264,924,160 + 943,718,400 = 23,592,960,000; 6N with
  // N = 30 (12 h^2 + 13 h) + 2h + (V + s) h = 3,398,584,320 + 6,144 +
  // 163,577,856 = 3,562,168,320 is 21,373,009,920.
  EXPECT_NEAR(six_n / mfu, 21373009920.0 / 23592960000.0, 1e-6);
  EXPECT_NEAR(nvidia / mfu, 1.0, 1e-6);

  const auto time = run_cli({"validate", csv.string()});
  EXPECT_EQ(time.status, 0) << time.err;
  EXPECT_NE(time.out.find("measured_ms"), std::string::npos) << time.out;
}

TEST(ValidateCli, MetricOnADatasetWithoutMeasuredMfuIsBadInputBeforeAnySimulation) {
  const auto csv = write_temp_file("rows.csv", three_rows());
  const auto r = run_cli({"validate", csv.string(), "--metric", "mfu_palm"});
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.err.find("rows.csv:3: --metric mfu_palm compares the measured MFU, but the row has none"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(run_cli({"validate", csv.string(), "--metric", "tflops"}).status, 1);
}

TEST(ValidateCli, MaxMapeExceededExitsWithStatusThree) {
  const auto csv = write_temp_file("rows.csv", three_rows());
  const auto r = run_cli({"validate", csv.string(), "--subset", "fit", "--max-mape", "0.0001"});
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("above --max-mape"), std::string::npos) << r.err;
}

TEST(ValidateCli, BadDatasetIsBadInputWithFileAndLine) {
  const auto csv =
      write_temp_file("bad.csv", std::string(kHeader) + "3.6,64,512,8,3072,32,30,2048,1,64,1,fast,fit\n");
  const auto r = run_cli({"validate", csv.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("bad.csv:2: iteration time (ms): 'fast' is not a number"), std::string::npos) << r.err;
}

TEST(ValidateCli, RowsThatMakeABadScenarioAreReportedBeforeAnySimulation) {
  // 30 layers do not split over 4 pipeline stages.
  const auto csv =
      write_temp_file("rows.csv", std::string(kHeader) + "3.6,64,512,8,3072,32,30,2048,1,16,4,4000,check\n");
  const auto r = run_cli({"validate", csv.string()});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("rows.csv:2: this row gives a bad scenario"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pp"), std::string::npos) << r.err;
  const auto missing = run_cli({"validate", "/nonexistent/rows.csv"});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("cannot open the dataset"), std::string::npos) << missing.err;
}

// A measured row ran on its cluster: when the memory model says it does not
// fit, the row is refused by default (naming the memory), and --allow-oom
// replays it so that its time can still be checked.
TEST(ValidateCli, ARowTheMemoryModelRefusesIsReplayedWithAllowOom) {
  // 39.1B without any model parallelism: ~16 bytes of weights, gradients and
  // optimizer state per parameter on each 80 GB GPU.
  const auto csv =
      write_temp_file("oom.csv", std::string(kHeader) + "39.1,64,64,1,8192,64,48,2048,1,64,1,20000,check\n");
  const auto refused = run_cli({"validate", csv.string()});
  EXPECT_EQ(refused.status, 1);
  EXPECT_NE(refused.err.find("oom.csv:2: this row gives a bad scenario"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("does not fit in GPU memory"), std::string::npos) << refused.err;
  const auto replayed = run_cli({"validate", csv.string(), "--allow-oom"});
  ASSERT_EQ(replayed.status, 0) << replayed.err << replayed.out;
  EXPECT_NE(replayed.out.find("MAPE check"), std::string::npos) << replayed.out;
}

// NVIDIA's H100 rows split sequences over 2 GPUs (`context parallelism`):
// the column reaches the plan. A row whose tp x dp x pp is half its GPUs
// simulates with cp 2, and a cp the sequence cannot be split by is refused
// by the loader, naming plan.context_parallel.
TEST(ValidateCli, TheContextParallelismColumnSetsThePlansContextParallel) {
  const std::string header =
      "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
      "sequence length,tensor parallelism,data parallelism,pipeline parallelism,context parallelism,"
      "iteration time (ms),set\n";
  // (write_temp_file reuses one folder: each file is read before the next.)
  const auto two = run_cli(
      {"validate",
       write_temp_file("cp2.csv", header + "3.6,64,512,8,3072,32,30,2048,1,32,1,2,4000,check\n").string()});
  ASSERT_EQ(two.status, 0) << two.err << two.out;
  EXPECT_NE(two.out.find("MAPE check"), std::string::npos) << two.out;
  // 2,048 tokens do not split into 2 x 3 chunks.
  const auto three = run_cli(
      {"validate",
       write_temp_file("cp3.csv", header + "3.6,96,512,8,3072,32,30,2048,1,32,1,3,4000,check\n").string()});
  EXPECT_EQ(three.status, 1) << three.out;
  EXPECT_NE(three.err.find("cp3.csv:2: this row gives a bad scenario"), std::string::npos) << three.err;
  EXPECT_NE(three.err.find("plan.context_parallel: 3 does not suit model.seq_len = 2048"), std::string::npos)
      << three.err;
}

TEST(ValidateCli, TemplateFileReplacesTheBuiltInCluster) {
  const auto csv = write_temp_file("rows.csv", three_rows());
  // The shipped template itself, read from the source tree, gives the same
  // predictions as the built-in copy.
  const auto builtin = run_cli({"validate", csv.string(), "--subset", "fit"});
  const auto file = run_cli(
      {"validate", csv.string(), "--subset", "fit", "--template", "scenarios/validation/vtrain-a100.yaml"});
  ASSERT_EQ(builtin.status, 0) << builtin.err;
  ASSERT_EQ(file.status, 0) << file.err;
  EXPECT_EQ(builtin.out.substr(builtin.out.find('\n')), file.out.substr(file.out.find('\n')));
}

// --fold replays a row folded as `run --fold` does (exact: the same
// prediction as the full replay) and says which rows it folded; --no-fold
// and the default below 4,096 GPUs replay every row whole.
TEST(ValidateCli, FoldReplaysARowFoldedWithTheFullReplaysPrediction) {
  const auto csv = write_temp_file(
      "rows.csv", std::string(kHeader) + "3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2,check\n");
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"validate", csv.string(), "-j", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    return r.out;
  };
  const auto row_line = [](const std::string& out) {
    const auto at = out.find("3975.2");
    return out.substr(at, out.find('\n', at) - at);
  };
  const auto folded = run({"--fold"});
  const auto whole = run({"--no-fold"});
  const auto plain = run({});
  EXPECT_NE(folded.find("line 2: folded, "), std::string::npos) << folded;
  EXPECT_NE(folded.find(" of 32 data-parallel replicas replayed"), std::string::npos) << folded;
  EXPECT_EQ(whole.find("folded"), std::string::npos) << whole;
  EXPECT_EQ(plain, whole);
  EXPECT_EQ(row_line(folded), row_line(whole));
  const auto both = run_cli({"validate", csv.string(), "--fold", "--no-fold"});
  EXPECT_EQ(both.status, 1) << both.out;
}

// A template on a preset without its own gpus_per_node gets the preset's node
// shape: GB200 NVL72's trays of 4 GPUs with their own NICs, not nodes of 8
// (which halve each GPU's NIC bandwidth across NVLink domains).
TEST(ValidateCli, ATemplateOnAPresetKeepsThePresetsGpusPerNode) {
  auto predicted = [&](const std::string& per_node) {
    const auto dir = fresh_dir("validate-preset");
    std::ofstream(dir / "rows.csv") << kHeader << "0.1,16,16,1,1024,8,2,2048,1,16,1,100,check\n";
    std::ofstream(dir / "template.yaml")
        << "name: t\ncluster: {preset: gb200-nvl72, "
        << (per_node.empty() ? "" : "gpus_per_node: " + per_node + ", ")
        << "nvlink_domain: 8, nodes: 4}\nmodel: {preset: llama3-8b, seq_len: 2048}\n"
           "plan: {tp: 1, pp: 1, dp: 16, micro_batch_size: 1, "
           "global_batch_size: 16}\n";
    const auto r = run_cli(
        {"validate", (dir / "rows.csv").string(), "--template", (dir / "template.yaml").string(), "-j", "1"});
    EXPECT_EQ(r.status, 0) << r.err << r.out;
    const auto at = r.out.find("100.0");
    return at == std::string::npos ? r.out : r.out.substr(at, r.out.find('\n', at) - at);
  };
  const auto preset = predicted("");
  EXPECT_EQ(preset, predicted("4"));
  EXPECT_NE(preset, predicted("8"));
}

}  // namespace
}  // namespace trainsim::testing
