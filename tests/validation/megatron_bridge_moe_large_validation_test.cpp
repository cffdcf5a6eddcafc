// trainsim against Megatron-Bridge's published DeepSeek-V3 step time on 256
// GB200s (tests/fixtures/megatron_bridge_moe/gb200_deepseek_v3_mxfp8.csv),
// replayed by `trainsim validate` on scenarios/validation/mbridge-gb200-deepseek-v3.yaml.
// A replay of minutes, so labelled slow. Nothing was fitted to it; trainsim is
// slow on it (docs/calibration.md, "MoE on H100" and below): the test holds
// the row to its error so that a change to the MoE model shows here.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/cli.hpp"
#include "support/validate_output.hpp"

namespace trainsim::testing {
namespace {

TEST(MegatronBridgeMoeLargeValidation, DeepSeekV3OnGb200IsHeldToItsKnownError) {
  const auto r = run_cli(
      {"validate",
       std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_bridge_moe/gb200_deepseek_v3_mxfp8.csv",
       "--template",
       std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/validation/mbridge-gb200-deepseek-v3.yaml",
       "--allow-oom"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  EXPECT_NEAR(first_row_error_percent(r.out), 33.8, 2.0) << r.out;
}

}  // namespace
}  // namespace trainsim::testing
