// PyTorch FSDP throughput against IBM and Meta's published measurements
// ("Maximizing training throughput using PyTorch FSDP", PyTorch blog,
// 2024-03-13): Llama-2 7B, 2 sequences of 4,096 tokens per GPU, bf16, no
// activation checkpointing, FlashAttention-2: MFU 0.57 on 128 A100-80GB
// (400 Gb/s per node) and 0.37 on 96 H100-80GB. docs/founding_studies.md
// (study 1, "Absolute MFU") gives the figures and why the gap stays: the
// bounds below pin today's errors (+12.3 and +12.8 points; H100 was +15.2
// before its fused-attention efficiency was fitted to NVIDIA's published
// step times, docs/calibration.md "H100") so that a change that widens them
// fails, and the 5-point bound is not reached yet.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/files.hpp"
#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {

// Runs one Llama-2 7B pure-FSDP scenario and returns its MFU.
double mfu_of(const std::string& preset, int nodes, const std::string& collectives, const std::string& plan) {
  const auto dir = fresh_dir("fsdp-mfu");
  const auto file = dir / "fsdp.yaml";
  std::ofstream(file) << "name: fsdp-7b\ncluster:\n  preset: " << preset << "\n  nodes: " << nodes
                      << "\n  collectives: {" << collectives
                      << "}\nmodel: {preset: llama2-7b}\n"
                         "plan: {dp: auto, tp: 1, pp: 1, zero_stage: 3, recompute: none, "
                      << plan << "}\n";
  const auto summary = run_summary({"run", file.string()});
  std::filesystem::remove_all(dir);
  return summary.value("mfu", 0.0);
}

double mfu(const std::string& preset, int nodes, const std::string& framework) {
  return mfu_of(
      preset, nodes, "fidelity: fast",
      fmt::format("framework: {}, micro_batch_size: 2, global_batch_size: {}", framework, 2 * 8 * nodes));
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

// The hardware-scaling study's pure-FSDP point (Llama-2 7B, one sequence
// per micro-batch, 8 per GPU as at 128 GPUs in the study, the study's
// collectives) against Fernandez et al.'s ~59.7% (A100) and ~40.8% (H100)
// (../shared/reference/published-results.md; secondary summaries).
// docs/founding_studies.md ("Absolute MFU") gives the figures: +6.6 and
// +6.6 points on 16 GPUs (+6.1 at 128), over the 5-point bound;
// the bounds pin today's error so that a change that widens it fails.
double study_mfu(const std::string& preset, const std::string& framework, double interference) {
  return mfu_of(preset, 2,
                fmt::format("fidelity: fast, protocol: auto, compute_interference: {}", interference),
                fmt::format("framework: {}, micro_batch_size: 1, global_batch_size: 128", framework));
}

TEST(FsdpMfuValidation, StudysPureFsdpIsWithinItsBoundOfFernandezOnBothGpusAndCloserThanMegatron) {
  const double a100 = study_mfu("dgx-a100-hdr", "pytorch_fsdp", 0.16);
  const double h100 = study_mfu("dgx-h100-ndr", "pytorch_fsdp", 0.16);
  EXPECT_NEAR(a100, 0.597, 0.075) << "published ~0.597";
  EXPECT_NEAR(h100, 0.408, 0.075) << "published ~0.408";
  // The H100/A100 ratio is the paper's headline (0.68): held closer.
  EXPECT_NEAR(h100 / a100, 0.408 / 0.597, 0.05);
  // The study's framework settings move both figures towards the paper.
  EXPECT_GT(study_mfu("dgx-a100-hdr", "megatron", 0.0), a100 + 0.05);
  EXPECT_GT(study_mfu("dgx-h100-ndr", "megatron", 0.0), h100 + 0.05);
}

// IBM's fms-fsdp README (foundation-model-stack/fms-fsdp, the table at its
// top): 128 A100-80GB, 4,096 tokens, tokens/s per GPU as run, each row's
// sharding, activation checkpointing and sequences per GPU. The cluster is
// DGX A100 nodes with two 200 Gb/s NICs each, IBM's 400 Gb/s per node
// (the PyTorch blog above). Hybrid sharding (plan.dp_shard) shards within a
// node as fms-fsdp's HSDP does. Large and recomputed, 70B is within 10%;
// the small models without recomputation run faster than measured (7B +21%,
// 13B +33% today: docs/founding_studies.md, "Absolute MFU"), and the bounds
// pin those gaps so that a change that widens them fails.
double fms_tokens_per_gpu(const std::string& model, const std::string& plan) {
  const auto dir = fresh_dir("fms-fsdp");
  const auto file = dir / "fms.yaml";
  std::ofstream(file) << "name: fms-fsdp\ncluster: {preset: dgx-a100-hdr, nodes: 16, nic: {per_node: 2}, "
                         "collectives: {fidelity: fast}}\nmodel: {preset: "
                      << model << "}\nplan: {dp: auto, tp: 1, pp: 1, zero_stage: 3, framework: pytorch_fsdp, "
                      << plan << "}\n";
  const auto summary = run_summary({"run", file.string()});
  std::filesystem::remove_all(dir);
  return summary.value("tokens_per_s", 0.0) / 128;
}

TEST(FsdpMfuValidation,
     FmsFsdpsSeventyBWithFullRecomputationIsWithinTenPercentAndItsSmallModelsWithinTheirBounds) {
  const double b70 =
      fms_tokens_per_gpu("llama2-70b", "recompute: full, micro_batch_size: 6, global_batch_size: 768");
  EXPECT_NEAR(b70 / 380, 1.0, 0.10) << b70 << " tokens/s per GPU, published 380";
  const double b7 = fms_tokens_per_gpu(
      "llama2-7b", "dp_shard: 8, recompute: none, micro_batch_size: 2, global_batch_size: 256");
  EXPECT_GT(b7, 3760.0);
  EXPECT_LT(b7 / 3760, 1.25) << b7 << " tokens/s per GPU, published 3,760";
  const double b13 = fms_tokens_per_gpu(
      "llama2-13b", "dp_shard: 8, recompute: none, micro_batch_size: 1, global_batch_size: 128");
  EXPECT_GT(b13, 1700.0);
  EXPECT_LT(b13 / 1700, 1.38) << b13 << " tokens/s per GPU, published 1,700";
}

}  // namespace
}  // namespace trainsim::testing
