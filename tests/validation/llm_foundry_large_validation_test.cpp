// Every row of llm-foundry's published H100 throughput, the 128-512-GPU rows
// included, and torchtitan's 405B rows (tests/fixtures/llm_foundry_h100/; about 95 s on 2 cores, hence
// `slow`): each file's MAPE pinned to what it measured on 2026-12-05
// (docs/calibration.md, "torchtitan and llm-foundry"). No trainsim constant
// was fitted to these rows.
#include <gtest/gtest.h>

#include "support/replay_fixture.hpp"

namespace trainsim::testing {
namespace {

TEST(LlmFoundryH100LargeValidation, EveryRowStaysAtItsPinnedMape) {
  for (const PinnedFile& file : {PinnedFile{"tests/fixtures/llm_foundry_h100/fsdp.csv", 26, 22.84},
                                 PinnedFile{"tests/fixtures/llm_foundry_h100/fsdp_ac.csv", 29, 19.78},
                                 PinnedFile{"tests/fixtures/llm_foundry_h100/shard_grad_op.csv", 6, 20.43},
                                 PinnedFile{"tests/fixtures/llm_foundry_h100/fp8_fsdp.csv", 6, 23.65},
                                 PinnedFile{"tests/fixtures/llm_foundry_h100/fp8_fsdp_ac.csv", 1, 41.96}})
    expect_pinned(file, 1 << 20);
}

// torchtitan's Table 5: Llama 3.1 405B on 512 GPUs (FSDP 8 x TP 8 x PP 8),
// 1F1B and interleaved, about 2 minutes with its AsyncTP modelled as torch's
// (the template's `tp_comm_overlap: torch_async`, re-pinned 2026-12-06 on
// the branch asynctp; as userbuffers, `true`, they read 26.36 and 28.25).
TEST(TorchtitanH100LargeValidation, FourHundredFiveBPipelineRowsStayAtTheirPinnedMape) {
  for (const PinnedFile& file :
       {PinnedFile{"tests/fixtures/torchtitan_h100/pp_405b_1f1b.csv", 1, 23.40},
        PinnedFile{"tests/fixtures/torchtitan_h100/pp_405b_interleaved.csv", 1, 25.63}})
    expect_pinned(file, 1 << 20);
}

}  // namespace
}  // namespace trainsim::testing
