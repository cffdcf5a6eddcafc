// PyTorch FSDP throughput against IBM and Meta's published measurements
// ("Maximizing training throughput using PyTorch FSDP", PyTorch blog,
// 2024-03-13): Llama-2 7B, 2 sequences of 4,096 tokens per GPU, bf16, no
// activation checkpointing, FlashAttention-2: MFU 0.57 on 128 A100-80GB
// (400 Gb/s per node) and 0.37 on 96 H100-80GB. docs/founding_studies.md
// ("Issue 14") gives the figures and why the gap stays: the bounds below pin
// today's errors (+12.3 and +12.8 points; H100 was +15.2 before its
// fused-attention efficiency was fitted to NVIDIA's published step times,
// docs/calibration.md "H100") so that a change that widens them fails, and
// the 5-point bound is not reached yet.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/files.hpp"
#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {

double mfu(const std::string& preset, int nodes, const std::string& framework) {
  const auto dir = fresh_dir("fsdp-mfu");
  const auto file = dir / "fsdp.yaml";
  std::ofstream(file) << "name: ibm-fsdp-7b\ncluster:\n  preset: " << preset << "\n  nodes: " << nodes
                      << "\n  collectives: {fidelity: fast}\nmodel: {preset: llama2-7b}\n"
                         "plan: {dp: auto, tp: 1, pp: 1, zero_stage: 3, framework: "
                      << framework << ", micro_batch_size: 2, global_batch_size: " << 2 * 8 * nodes
                      << ", recompute: none}\n";
  const auto summary = run_summary({"run", file.string()});
  std::filesystem::remove_all(dir);
  return summary.value("mfu", 0.0);
}

TEST(FsdpMfuValidation, PytorchFsdpOn128A100sIsWithinItsBoundOfIbms57Percent) {
  const double pytorch = mfu("dgx-a100-hdr", 16, "pytorch_fsdp");
  EXPECT_NEAR(pytorch, 0.57, 0.13) << "published 0.57";
  // The eager kernels cost what Megatron's fused ones do not.
  EXPECT_LT(pytorch, mfu("dgx-a100-hdr", 16, "megatron") - 0.05);
}

TEST(FsdpMfuValidation, PytorchFsdpOn96H100sIsWithinItsBoundOfIbms37Percent) {
  const double pytorch = mfu("dgx-h100-ndr", 12, "pytorch_fsdp");
  EXPECT_NEAR(pytorch, 0.37, 0.135) << "published 0.37";
  EXPECT_LT(pytorch, mfu("dgx-h100-ndr", 12, "megatron") - 0.05);
}

}  // namespace
}  // namespace trainsim::testing
