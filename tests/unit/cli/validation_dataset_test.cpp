#include "sim/cli/validation_dataset.hpp"

#include <gtest/gtest.h>

#include "platforms/input_error.hpp"

namespace trainsim::cli {
namespace {

const char* kMulti =
    "\xEF\xBB\xBF# provenance line\n"
    "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
    "sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),set\n"
    "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5,check\n"
    "# a comment between rows\n"
    "175,512,1536,2,12288,96,96,2048,4,8,16,54255.9,fit\n";

// ground_truth_single.csv: its header starts with "# GPUs" and it has no
// parameter count.
const char* kSingle =
    "\xEF\xBB\xBF# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
    "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n"
    "2,16,8,1024,16,24,1024,1,1,2,372.160408\n";

std::vector<std::string> problems(const std::string& text) {
  try {
    parse_validation_dataset(text, "d.csv");
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

TEST(ValidationDataset, ReadsVtrainMultiNodeRowsWithSetsAndComments) {
  const auto rows = parse_validation_dataset(kMulti, "d.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].line, 3);
  EXPECT_EQ(rows[0].set, "check");
  EXPECT_DOUBLE_EQ(rows[0].parameters_billion, 3.6);
  EXPECT_EQ(rows[0].dp, 64);
  EXPECT_DOUBLE_EQ(rows[0].measured_ms, 3566.5);
  EXPECT_EQ(rows[1].line, 5);
  EXPECT_EQ(rows[1].set, "fit");
  EXPECT_EQ(rows[1].pp, 16);
  EXPECT_EQ(rows[1].hidden, 12288);
}

TEST(ValidationDataset, ReadsTheSingleNodeFormatWhoseHeaderStartsWithAHash) {
  const auto rows = parse_validation_dataset(kSingle, "d.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].gpus, 2);
  EXPECT_EQ(rows[0].pp, 2);
  EXPECT_EQ(rows[0].set, "");
  EXPECT_DOUBLE_EQ(rows[0].parameters_billion, 0);
}

// NVIDIA's published H100 rows (tests/fixtures/nemo_h100/) split sequences
// over 2 GPUs: the optional column enters the GPU count, and a file without
// it leaves cp at 0 (the template's value stands).
TEST(ValidationDataset, AContextParallelismColumnCountsInTheGpusAndIsZeroWhenAbsent) {
  const std::string header =
      "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
      "sequence length,tensor parallelism,data parallelism,pipeline parallelism,context parallelism,"
      "iteration time (ms),set\n";
  const auto rows =
      parse_validation_dataset(header + "70.6,64,128,1,8192,64,80,8192,4,2,4,2,14720,fit\n", "d.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].cp, 2);
  EXPECT_EQ(rows[0].tp * rows[0].dp * rows[0].pp * rows[0].cp, rows[0].gpus);
  EXPECT_EQ(parse_validation_dataset(kMulti, "d.csv")[0].cp, 0);

  const auto p = problems(header + "70.6,64,128,1,8192,64,80,8192,4,4,4,2,14720,fit\n");  // 128 GPUs' worth
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(
      p[0].find("d.csv:2: tensor x data x pipeline x context parallelism = 4 x 4 x 4 x 2 = 128, but # GPUs "
                "is 64"),
      std::string::npos)
      << p[0];
}

// NVIDIA's DGX Cloud tables publish an MFU beside the step time
// (`trainsim validate --metric`): optional, a percentage.
TEST(ValidationDataset, AnMfuColumnIsAPercentageAndZeroWhenAbsent) {
  const std::string header =
      "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
      "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),MFU (%)\n";
  const auto rows = parse_validation_dataset(header + "8,128,1,4096,32,32,8192,1,8,1,12910,59.37\n", "d.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].measured_mfu_percent, 59.37);
  EXPECT_EQ(parse_validation_dataset(kMulti, "d.csv")[0].measured_mfu_percent, 0);

  const auto p = problems(header + "8,128,1,4096,32,32,8192,1,8,1,12910,0.5937e3\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("d.csv:2: MFU (%): '0.5937e3' is not a number from 0.001 to 100 (percent of the GPUs' "
                      "peak)"),
            std::string::npos)
      << p[0];
}

// Megatron-LM's weak-scaling table leaves the virtual pipeline size unstated:
// an optional column carries the one assumed per row.
TEST(ValidationDataset, AVirtualStagesColumnIsAWholeNumberAndZeroWhenAbsent) {
  const std::string header =
      "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
      "tensor parallelism,data parallelism,pipeline parallelism,virtual stages,iteration time (ms)\n";
  const auto rows =
      parse_validation_dataset(header + "768,384,1,8192,64,84,4096,8,48,2,42,2177.0\n", "d.csv");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].virtual_stages, 42);
  EXPECT_EQ(parse_validation_dataset(kMulti, "d.csv")[0].virtual_stages, 0);
  const auto p = problems(header + "768,384,1,8192,64,84,4096,8,48,2,4.5,2177.0\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("d.csv:2: virtual stages: '4.5' is not a whole number"), std::string::npos) << p[0];
}

TEST(ValidationDataset, CountsBeyondAnIntAndInfiniteTimesAreRefusedNotConverted) {
  // Found by the fuzz campaign: 1e124 GPUs passed as a whole number and
  // overflowed its conversion to int (undefined behaviour).
  std::string text = kMulti;
  text += "3.6,1e124,512,8,3072,32,30,2048,1,64,1,3566.5,check\n";  // line 6
  text += "3.6,64,512,8,3072,32,30,2048,1,64,1,inf,check\n";        // line 7
  const auto p = problems(text);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NE(p[0].find("d.csv:6: # GPUs: '1e124' is not a whole number between 1 and 2147483647"),
            std::string::npos)
      << p[0];
  EXPECT_NE(p[1].find("d.csv:7: iteration time (ms): 'inf' is not a number from 0.001 to 1e+10"),
            std::string::npos)
      << p[1];
}

TEST(ValidationDataset, AParallelismProductBeyondAnIntIsAMismatchNotAnOverflow) {
  // Found by the fuzz campaign: tp 128 x dp 47,777,777 overflowed the int
  // product before it was compared with the GPU count (undefined behaviour).
  std::string text = kMulti;
  text += "3.6,64,512,8,3072,32,30,2048,128,47777777,1,3566.5,check\n";  // line 6
  const auto p = problems(text);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(
      p[0].find("d.csv:6: tensor x data x pipeline parallelism = 128 x 47777777 x 1 = 6115555456, but # "
                "GPUs is 64"),
      std::string::npos)
      << p[0];
}

TEST(ValidationDataset, BadRowsAreAllReportedWithLineColumnAndValue) {
  std::string text = kMulti;
  text += "3.6,64,512,eight,3072,32,30,2048,1,64,1,3566.5,check\n";  // line 6
  text += "3.6,64,512,8,3072,32,30,2048,2,64,1,3566.5,check\n";      // line 7: 2 x 64 x 1 != 64
  text += "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5,maybe\n";      // line 8
  text += "3.6,64,512,8\n";                                          // line 9
  const auto p = problems(text);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_NE(p[0].find("d.csv:6: micro batch: 'eight' is not a whole number"), std::string::npos) << p[0];
  EXPECT_NE(p[1].find("d.csv:7: tensor x data x pipeline parallelism = 2 x 64 x 1 = 128, but # GPUs is 64"),
            std::string::npos)
      << p[1];
  EXPECT_NE(p[2].find("d.csv:8: set: 'maybe'"), std::string::npos) << p[2];
  EXPECT_NE(p[3].find("d.csv:9: 4 cells"), std::string::npos) << p[3];
}

TEST(ValidationDataset, UnknownAndMissingColumnsAreNamed) {
  const auto p = problems("# GPUs,global batch,colour\n8,8,red\n");
  ASSERT_FALSE(p.empty());
  EXPECT_NE(p[0].find("d.csv:1: unknown column 'colour'"), std::string::npos) << p[0];
  bool missing = false;
  for (const auto& s : p)
    missing = missing || s.find("missing column 'hidden size'") != std::string::npos;
  EXPECT_TRUE(missing);
  EXPECT_FALSE(problems("").empty());
}

TEST(ValidationDataset, AColumnGivenTwiceIsAnErrorNamingBothPositions) {
  const auto p = problems(
      "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
      "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),# GPUs\n"
      "2,16,8,1024,16,24,1024,1,1,2,372.16,4\n");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], "d.csv:1: column '# GPUs' is given twice, as columns 1 and 12 (expected each column once)");
}

TEST(ValidationDataset, AMeasuredTimeMustBeANormalNumberInTheRangeOfAnIteration) {
  const std::string header =
      "# GPUs,global batch,micro batch,hidden size,attention heads,# layers,sequence length,"
      "tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms)\n";
  for (const char* bad : {"4e-320", "0.0001", "2e10", "-5", "0", "nan"}) {
    const auto p = problems(header + "2,16,8,1024,16,24,1024,1,1,2," + bad + "\n");
    ASSERT_EQ(p.size(), 1u) << bad;
    EXPECT_EQ(p[0], std::string("d.csv:2: iteration time (ms): '") + bad +
                        "' is not a number from 0.001 to 1e+10 (1 us to about 115 days, in milliseconds)");
  }
  EXPECT_TRUE(problems(header + "2,16,8,1024,16,24,1024,1,1,2,0.001\n").empty());
  EXPECT_TRUE(problems(header + "2,16,8,1024,16,24,1024,1,1,2,1e10\n").empty());
}

}  // namespace
}  // namespace trainsim::cli
