// PyTorch profiler (Kineto) traces: the kernel class table, the reader (a
// hand-written trace whose every field is known, bad input), the work an op's
// recorded shapes give, the per-step busy-time breakdown, and the real traces
// Holistic Trace Analysis ships as test data (when present: see
// TRAINSIM_KINETO_FIXTURES in tests/CMakeLists.txt).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "platforms/input_error.hpp"
#include "support/files.hpp"
#include "workloads/kineto/busy_time.hpp"
#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/op_shapes.hpp"
#include "workloads/kineto/trace_file.hpp"

namespace trainsim::kineto {
namespace {
namespace fs = std::filesystem;

const KernelClassTable& table() {
  return KernelClassTable::builtin();
}

std::string class_of(const std::string& name) {
  return table().at(table().classify(name)).name;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const platforms::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelClasses, NamesOfCommonLibrariesFallIntoTheirClass) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off",
       "gemm"},
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "gemm"},
      {"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", "gemm"},
      {"ampere_sgemm_128x64_nn", "gemm"},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(Params)", "gemm"},
      {"Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN", "gemm"},
      {"triton_tem_fused_mm_0", "gemm"},
      {"void splitKreduce_kernel<float, float, float, float, true, false, false>(cublasSplitKParams<float>)",
       "gemm"},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, "
       "false, true, false, false, true, true, false, false>(Flash_fwd_params)",
       "attention"},
      {"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>(Flash_bwd_params)",
       "attention"},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0",
       "attention"},
      {"fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel)", "attention"},
      {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl_collective"},
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "nccl_collective"},
      {"ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl_collective"},
      {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "nccl_p2p"},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "nccl_p2p"},
      {"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int)",
       "norm"},
      {"void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 128, true, 1, true>(cudnnTensorStruct)",
       "norm"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16",
       "convolution"},
      {"void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>, float>(int)", "optimizer"},
      {"void split_embedding_codegen_forward_unweighted_kernel<float, float, float, long, 2ul>(int)",
       "embedding"},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)",
       "elementwise"},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>(at::native::ReduceOp<float>)",
       "elementwise"},
      {"triton_poi_fused_add_cos_sin_0", "elementwise"},
      {"Memcpy DtoD (Device -> Device)", "memcpy"},
      {"Memset (Device)", "memset"},
      {"void cub::DeviceRadixSortOnesweepKernel<Policy800, false, long, int>(int)", "other"},
  };
  for (const auto& [name, expected] : cases)
    EXPECT_EQ(class_of(name), expected) << name;
}

TEST(KernelClasses, EveryClassHasARoleAndTheLastCatchesEverything) {
  ASSERT_GE(table().size(), 10);
  EXPECT_EQ(table().classes().back().name, "other");
  EXPECT_EQ(table().classify(""), table().size() - 1);
  EXPECT_EQ(table().find("gemm") >= 0, true);
  EXPECT_EQ(table().at(table().find("nccl_collective")).role, KernelRole::communication);
  EXPECT_EQ(table().at(table().find("memcpy")).role, KernelRole::copy);
  EXPECT_EQ(table().at(table().find("attention")).role, KernelRole::attention);
}

TEST(KernelClasses, ABadTableIsRefusedWithItsLineAndKey) {
  const std::string bad_role = error_of([] {
    KernelClassTable::parse(
        "classes:\n  - {name: gemm, role: matmul, patterns: [gemm]}\n"
        "  - {name: other, role: compute, patterns: ['']}\n",
        "mine.yaml");
  });
  EXPECT_NE(bad_role.find("mine.yaml:2"), std::string::npos) << bad_role;
  EXPECT_NE(bad_role.find("classes.0.role"), std::string::npos) << bad_role;
  EXPECT_NE(bad_role.find("matmul"), std::string::npos) << bad_role;
  const std::string bad_regex = error_of([] {
    KernelClassTable::parse(
        "classes:\n  - {name: gemm, role: gemm, patterns: ['gemm(']}\n"
        "  - {name: other, role: compute, patterns: ['']}\n",
        "mine.yaml");
  });
  EXPECT_NE(bad_regex.find("classes.0.patterns.0"), std::string::npos) << bad_regex;
  EXPECT_NE(bad_regex.find("not a regular expression"), std::string::npos) << bad_regex;
  const std::string no_catch_all = error_of([] {
    KernelClassTable::parse("classes:\n  - {name: gemm, role: gemm, patterns: [gemm]}\n", "mine.yaml");
  });
  EXPECT_NE(no_catch_all.find("does not match every kernel name"), std::string::npos) << no_catch_all;
  const std::string twice = error_of([] {
    KernelClassTable::parse(
        "classes:\n  - {name: a, role: gemm, patterns: [gemm]}\n"
        "  - {name: a, role: compute, patterns: ['']}\n",
        "mine.yaml");
  });
  EXPECT_NE(twice.find("given twice"), std::string::npos) << twice;
  const std::string unknown_key = error_of([] {
    KernelClassTable::parse("classes:\n  - {name: a, role: compute, patterns: [''], colour: red}\n",
                            "mine.yaml");
  });
  EXPECT_NE(unknown_key.find("colour"), std::string::npos) << unknown_key;
}

// Two steps of one rank: a GEMM launched by aten::mm (shapes recorded), a
// flash-attention forward, an element-wise kernel, and an all-reduce on a
// second stream that overlaps the GEMM by 30 us and runs 20 us alone.
const char* kHandWritten = R"json({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045542912, "numSms": 132}],
  "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8,
                      "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "ranks": [0,1,2,3,4,5,6,7]}]},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 10, "tid": 10, "ts": 1000000, "dur": 500},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "pid": 10, "tid": 10, "ts": 1000500, "dur": 400},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": 1000010, "dur": 20,
     "args": {"External id": 101, "Input Dims": [[4096, 8192], [8192, 2048]],
              "Input type": ["c10::BFloat16", "c10::BFloat16"], "Input Strides": [[8192, 1], [2048, 1]]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000015, "dur": 5,
     "args": {"External id": 101, "correlation": 5001}},
    {"ph": "X", "cat": "kernel", "name": "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "pid": 0, "tid": 7,
     "ts": 1000100, "dur": 100, "args": {"External id": 101, "device": 0, "stream": 7, "correlation": 5001,
     "grid": [132, 1, 1], "block": [384, 1, 1]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention", "pid": 10, "tid": 10,
     "ts": 1000030, "dur": 20, "args": {"External id": 102,
     "Input Dims": [[2, 16, 4096, 128], [2, 4, 4096, 128], [2, 4, 4096, 128], [], [], [], []],
     "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", ""],
     "Concrete Inputs": ["", "", "", "0.", "True", "False", ""]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000035, "dur": 5,
     "args": {"External id": 102, "correlation": 5002}},
    {"ph": "X", "cat": "kernel", "name": "void flash_fwd_kernel<Flash_fwd_kernel_traits<128>>(Flash_fwd_params)",
     "pid": 0, "tid": 7, "ts": 1000200, "dur": 50,
     "args": {"External id": 102, "device": 0, "stream": 7, "correlation": 5002}},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 21, "ts": 1000170, "dur": 50,
     "args": {"device": 0, "stream": 21, "correlation": 5003, "Collective name": "allreduce",
     "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 8, "dtype": "BFloat16",
     "Process Group Name": "0", "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000040, "dur": 5,
     "args": {"correlation": 5003}},
    {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
     "pid": 0, "tid": 7, "ts": 1000600, "dur": 10, "args": {"device": 0, "stream": 7, "correlation": 5004}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10, "ts": 1000550, "dur": 5,
     "args": {"correlation": 5004}},
    {"ph": "X", "cat": "python_function", "name": "train.py(12): step", "pid": 10, "tid": 10, "ts": 1000000, "dur": 900},
    {"ph": "s", "cat": "ac2g", "id": 5001, "name": "ac2g", "pid": 10, "tid": 10, "ts": 1000015}
  ]
})json";

RankTrace hand_written() {
  return parse_trace(kHandWritten, "rank3.json", 0, table());
}

TEST(KinetoTrace, ReadsEveryFieldOfAHandWrittenTrace) {
  const RankTrace t = hand_written();
  EXPECT_EQ(t.rank, 3);
  EXPECT_TRUE(t.rank_recorded);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.backend, "nccl");
  EXPECT_EQ(t.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.gpu_sms, 132);
  ASSERT_EQ(t.groups.size(), 1u);
  EXPECT_EQ(t.groups[0].ranks.size(), 8u);
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].number, 7);
  EXPECT_DOUBLE_EQ(t.steps[0].duration_us(), 500);
  EXPECT_DOUBLE_EQ(t.steps[1].start_us - t.steps[0].start_us, 500);
  ASSERT_EQ(t.kernels.size(), 4u);
  // By start: the GEMM, the all-reduce, the attention, the fill.
  const Kernel& gemm = t.kernels[0];
  EXPECT_EQ(t.name_of(gemm).substr(0, 9), "nvjet_tst");
  EXPECT_EQ(table().at(gemm.kernel_class).name, "gemm");
  EXPECT_EQ(gemm.stream, 7);
  EXPECT_EQ(gemm.device, 0);
  EXPECT_EQ(gemm.correlation, 5001);
  EXPECT_EQ(gemm.grid[0], 132);
  EXPECT_EQ(gemm.block[0], 384);
  EXPECT_DOUBLE_EQ(gemm.duration_us, 100);
  EXPECT_EQ(gemm.step, 0);
  ASSERT_GE(gemm.op, 0);
  EXPECT_EQ(t.ops[static_cast<std::size_t>(gemm.op)].name, "aten::mm");
  ASSERT_GE(gemm.launch, 0);
  EXPECT_DOUBLE_EQ(t.launches[static_cast<std::size_t>(gemm.launch)].start_us + 85, gemm.start_us);
  const Kernel& nccl = t.kernels[1];
  EXPECT_EQ(table().at(nccl.kernel_class).name, "nccl_collective");
  ASSERT_GE(nccl.collective, 0);
  const CollectiveInfo& c = t.collectives[static_cast<std::size_t>(nccl.collective)];
  EXPECT_TRUE(c.metadata);
  EXPECT_EQ(c.collective, "allreduce");
  EXPECT_EQ(c.in_elements, 1048576);
  EXPECT_EQ(c.dtype, "BFloat16");
  EXPECT_EQ(c.group_size, 8);
  EXPECT_EQ(c.group_ranks.size(), 8u);
  EXPECT_EQ(table().at(t.kernels[2].kernel_class).name, "attention");
  // Launched during step 8: its step, though it starts after step 8's span began.
  EXPECT_EQ(t.kernels[3].step, 1);
  EXPECT_TRUE(t.shapes_recorded);
  // The Python frame and the flow arrow were dropped.
  EXPECT_EQ(t.ops.size(), 2u);
}

TEST(KinetoTrace, RecordedShapesGiveEachOpItsWork) {
  const RankTrace t = hand_written();
  const OpWork mm = op_work(t.ops[static_cast<std::size_t>(t.kernels[0].op)], KernelRole::gemm);
  EXPECT_EQ(mm.kind, WorkKind::matmul);
  EXPECT_DOUBLE_EQ(mm.m, 4096);
  EXPECT_DOUBLE_EQ(mm.k, 8192);
  EXPECT_DOUBLE_EQ(mm.n, 2048);
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 4096 * 8192 * 2048);
  EXPECT_DOUBLE_EQ(mm.bytes, 2.0 * (4096.0 * 8192 + 8192.0 * 2048 + 4096.0 * 2048));
  EXPECT_EQ(mm.dtype, "bf16");
  const OpWork fa = op_work(t.ops[static_cast<std::size_t>(t.kernels[2].op)], KernelRole::attention);
  EXPECT_EQ(fa.kind, WorkKind::attention_forward);
  EXPECT_TRUE(fa.causal);
  EXPECT_FALSE(fa.causal_assumed);
  EXPECT_DOUBLE_EQ(fa.m, 4096);
  EXPECT_DOUBLE_EQ(fa.k, 128);
  EXPECT_DOUBLE_EQ(fa.batch, 2 * 16);
  EXPECT_DOUBLE_EQ(fa.flops, 0.5 * 4 * 32 * 4096.0 * 4096 * 128);
  // q and out over 16 heads, k and v over 4 (grouped-query attention).
  EXPECT_DOUBLE_EQ(fa.bytes, 2.0 * 2 * 128 * (2 * 4096 * 16 + 2 * 4096 * 4));
}

TEST(KinetoTrace, OtherGemmAndAttentionOpsAndMemoryKernels) {
  CpuOp addmm{"aten::addmm",
              1,
              -1,
              0,
              0,
              {{{1024}}, {{64, 512}}, {{512, 1024}}, {}, {}},
              {"float", "float", "float", "Scalar", "Scalar"},
              {}};
  const OpWork a = op_work(addmm, KernelRole::gemm);
  EXPECT_EQ(a.kind, WorkKind::matmul);
  EXPECT_DOUBLE_EQ(a.m * a.n * a.k, 64.0 * 1024 * 512);
  EXPECT_EQ(a.dtype, "fp32");
  CpuOp linear{"aten::linear",
               2,
               -1,
               0,
               0,
               {{{8, 512, 4096}}, {{11008, 4096}}, {}},
               {"c10::BFloat16", "c10::BFloat16", ""},
               {}};
  const OpWork l = op_work(linear, KernelRole::gemm);
  EXPECT_DOUBLE_EQ(l.m, 8 * 512);
  EXPECT_DOUBLE_EQ(l.n, 11008);
  EXPECT_DOUBLE_EQ(l.k, 4096);
  CpuOp bmm{"aten::bmm", 3, -1, 0, 0, {{{64, 128, 2048}}, {{64, 2048, 128}}}, {"c10::Half", "c10::Half"}, {}};
  const OpWork b = op_work(bmm, KernelRole::gemm);
  EXPECT_EQ(b.kind, WorkKind::batched_matmul);
  EXPECT_DOUBLE_EQ(b.batch, 64);
  EXPECT_EQ(b.dtype, "fp16");
  // _flash_attention_backward: grad_out first, [b, s, h, d] layout, is_causal at 11, here False.
  CpuOp bwd{"aten::_flash_attention_backward",
            4,
            -1,
            0,
            0,
            {{{1, 2048, 8, 64}}, {{1, 2048, 8, 64}}, {{1, 2048, 8, 64}}, {{1, 2048, 8, 64}}},
            {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "c10::BFloat16"},
            {"", "", "", "", "", "", "", "", "", "", "0.", "False"}};
  const OpWork w = op_work(bwd, KernelRole::attention);
  EXPECT_EQ(w.kind, WorkKind::attention_backward);
  EXPECT_FALSE(w.causal);
  EXPECT_DOUBLE_EQ(w.m, 2048);
  EXPECT_DOUBLE_EQ(w.batch, 8);
  EXPECT_DOUBLE_EQ(w.flops, 2.5 * 4 * 8 * 2048.0 * 2048 * 64);
  // An element-wise add of two bf16 tensors: both read, one written.
  CpuOp add{"aten::add",
            5,
            -1,
            0,
            0,
            {{{1024, 1024}}, {{1024, 1024}}, {}},
            {"c10::BFloat16", "c10::BFloat16", "Scalar"},
            {}};
  EXPECT_DOUBLE_EQ(op_work(add, KernelRole::memory).bytes, 3 * 2.0 * 1024 * 1024);
  // A foreach op over a tensor list (fp32 states).
  CpuOp adam{"aten::_fused_adam_",         6, -1, 0, 0, {{{10}, {20}}, {{10}, {20}}},
             {"TensorList", "TensorList"}, {}};
  // In place: the first list written back.
  EXPECT_DOUBLE_EQ(op_work(adam, KernelRole::memory).bytes, 4.0 * (30 + 30) + 4.0 * 30);
  // A copy reads its source and writes its destination; a reduction writes
  // a scalar; a fill only writes.
  CpuOp copy{"aten::copy_", 7, -1, 0, 0, {{{256}}, {{256}}, {}}, {"float", "c10::BFloat16", "bool"}, {}};
  EXPECT_DOUBLE_EQ(op_work(copy, KernelRole::memory).bytes, 4.0 * 256 + 2.0 * 256);
  CpuOp sum{"aten::sum", 8, -1, 0, 0, {{{1000}}, {}}, {"float", ""}, {}};
  EXPECT_DOUBLE_EQ(op_work(sum, KernelRole::memory).bytes, 4000);
  CpuOp fill{"aten::fill_", 9, -1, 0, 0, {{{1000}}, {}}, {"float", "Scalar"}, {}};
  EXPECT_DOUBLE_EQ(op_work(fill, KernelRole::memory).bytes, 4000);
  // A GEMM op launched by a kernel of another role gives nothing.
  EXPECT_EQ(op_work(addmm, KernelRole::attention).kind, WorkKind::none);
}

TEST(BusyTime, ClassesAddUpToTheBusyTimeAndTheRestIsExposed) {
  const RankTrace t = hand_written();
  const RankBreakdown b = break_down(t, table());
  ASSERT_EQ(b.steps.size(), 2u);
  const StepBreakdown& s = b.steps[0];
  // Step 7: gemm [100, 200), nccl [170, 220), attention [200, 250): busy 150 us.
  EXPECT_NEAR(s.busy_s, 150e-6, 1e-12);
  EXPECT_NEAR(s.step_s, 500e-6, 1e-12);
  EXPECT_NEAR(s.idle_s, 350e-6, 1e-12);
  EXPECT_NEAR(s.communication_s, 50e-6, 1e-12);
  // The all-reduce overlaps compute throughout: nothing exposed.
  EXPECT_NEAR(s.exposed_communication_s, 0, 1e-12);
  EXPECT_NEAR(std::accumulate(s.busy_share_s.begin(), s.busy_share_s.end(), 0.0), s.busy_s, 1e-12);
  EXPECT_NEAR(s.busy_share_s[static_cast<std::size_t>(table().find("gemm"))], 100e-6, 1e-12);
  EXPECT_NEAR(s.kernel_s[static_cast<std::size_t>(table().find("nccl_collective"))], 50e-6, 1e-12);
  EXPECT_EQ(s.stream_busy_s.size(), 2u);
  EXPECT_NEAR((s.stream_busy_s.at({0, 7})), 150e-6, 1e-12);
  // Step 8: the fill kernel alone.
  EXPECT_NEAR(b.steps[1].busy_s, 10e-6, 1e-12);
  EXPECT_NEAR(b.mean.step_s, 450e-6, 1e-12);
}

TEST(BusyTime, ExposedCommunicationIsWhatRunsAlone) {
  // An all-reduce [0, 100) beside a GEMM [50, 80): 70 us exposed.
  const std::string text = R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 200},
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "pid": 0, "tid": 20,
     "ts": 0, "dur": 100, "args": {"stream": 20}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 50, "dur": 30,
     "args": {"stream": 7}}]})json";
  const RankTrace t = parse_trace(text, "t.json", 0, table());
  const StepBreakdown s = break_down(t, table()).steps.at(0);
  EXPECT_NEAR(s.exposed_communication_s, 70e-6, 1e-12);
  EXPECT_NEAR(s.busy_s, 100e-6, 1e-12);
  EXPECT_NEAR(s.compute_s, 30e-6, 1e-12);
  // No metadata: the collective from the kernel's name.
  EXPECT_EQ(t.collectives.at(0).collective, "allreduce");
  EXPECT_FALSE(t.collectives.at(0).metadata);
  EXPECT_FALSE(t.rank_recorded);
}

TEST(KinetoTrace, BadEventsAreNamedWithTheirPositionAndName) {
  const std::string text = R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "ts": 5},
    {"ph": "X", "cat": "kernel", "name": "k2", "ts": "soon", "dur": 3},
    {"ph": "B", "cat": "kernel", "name": "k3", "ts": 5, "dur": 1},
    {"ph": "X", "cat": "kernel", "ts": 5, "dur": 1},
    {"ph": "X", "cat": "kernel", "name": "k5", "ts": 5, "dur": -2},
    7
  ]})json";
  const std::string e = error_of([&] { parse_trace(text, "bad.json", 0, table()); });
  EXPECT_NE(e.find("bad.json: traceEvents[0] ('ampere_sgemm_128x64_nn'): kernel event: 'dur' is missing"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("traceEvents[1] ('k2'): kernel event: 'ts' is not a number"), std::string::npos) << e;
  EXPECT_NE(e.find("traceEvents[2] ('k3'): a kernel event with ph 'B'"), std::string::npos) << e;
  EXPECT_NE(e.find("traceEvents[3]: a GPU event without a name"), std::string::npos) << e;
  EXPECT_NE(e.find("traceEvents[4] ('k5'): kernel event: 'dur' is -2"), std::string::npos) << e;
  EXPECT_NE(e.find("traceEvents[5]: not an event"), std::string::npos) << e;
}

TEST(KinetoTrace, NotATraceSaysWhatWasExpected) {
  EXPECT_NE(error_of([] {
              parse_trace("{\"traceEvents\": [\n  {\"ph\": \"X\",,}]}", "x.json", 0, table());
            }).find("x.json:2:14: not valid JSON"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_trace("{\"schemaVersion\": 1}", "x.json", 0, table());
            }).find("x.json: no traceEvents"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              parse_trace("{\"traceEvents\": {}}", "x.json", 0, table());
            }).find("traceEvents is a map"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_trace("\"text\"", "x.json", 0, table()); }).find("traceEvents is missing"),
            std::string::npos);
}

void write_gzip(const fs::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
}

TEST(TraceFiles, GzipAndPlainFilesReadAlikeAndDamageIsNamed) {
  const fs::path dir = testing::fresh_dir("kineto-files");
  std::ofstream(dir / "rank3.json") << kHandWritten;
  write_gzip(dir / "rank3.pt.trace.json.gz", kHandWritten);
  const RankTrace plain = read_trace_file(dir / "rank3.json", 0, table());
  const RankTrace zipped = read_trace_file(dir / "rank3.pt.trace.json.gz", 0, table());
  ASSERT_EQ(plain.kernels.size(), zipped.kernels.size());
  EXPECT_EQ(plain.names, zipped.names);
  // Truncated: the gzip stream ends early.
  const std::string bytes = testing::read_file(dir / "rank3.pt.trace.json.gz");
  std::ofstream(dir / "cut.json.gz", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  const std::string cut = error_of([&] { read_trace_file(dir / "cut.json.gz", 0, table()); });
  EXPECT_NE(cut.find("cut.json.gz: not a valid gzip file"), std::string::npos) << cut;
  // A folder, a FIFO: refused by the one input reader.
  EXPECT_NE(error_of([&] { read_trace_file(dir, 0, table()); }).find("directory"), std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "fifo.json").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { read_trace_file(dir / "fifo.json", 0, table()); }).find("fifo.json"),
            std::string::npos);
  fs::remove(dir / "fifo.json");
  // Not UTF-8.
  std::ofstream(dir / "latin1.json", std::ios::binary) << "{\"traceEvents\": [], \"x\": \"caf\xe9\"}";
  EXPECT_NE(error_of([&] { read_trace_file(dir / "latin1.json", 0, table()); }).find("UTF-8"),
            std::string::npos);
  fs::remove(dir / "latin1.json");
  fs::remove(dir / "cut.json.gz");
  // A folder of traces: each file a rank; two files of one rank are refused.
  const auto files = find_trace_files({dir.string()});
  ASSERT_EQ(files.size(), 2u);
  const std::string twice = error_of([&] { read_traces(files, table()); });
  EXPECT_NE(twice.find("rank 3 again"), std::string::npos) << twice;
  EXPECT_NE(error_of([&] { find_trace_files({(dir / "missing.json").string()}); }).find("no such file"),
            std::string::npos);
  fs::remove_all(dir);
}

// The real traces of Holistic Trace Analysis (tests/data of
// facebookresearch/HolisticTraceAnalysis, MIT; PROVENANCE beside them).
const fs::path kHta = fs::path(TRAINSIM_KINETO_FIXTURES);

struct HtaTrace {
  std::string file;
  int rank;
  std::string gpu;  // deviceProperties name ("" when the trace has none)
  std::size_t steps;
  bool nccl_metadata;
};

const std::vector<HtaTrace>& hta_traces() {
  static const std::vector<HtaTrace> traces = {
      {"mi250_rocm6_2.json.gz", 0, "AMD Radeon Graphics", 2, false},
      {"a100_nccl_metadata_rank0.json.gz", 0, "NVIDIA A100-PG509-200", 3, true},
      {"dlrm_2_of_128/rank-0.json.gz", 0, "", 2, false},
      {"dlrm_2_of_128/rank-1.json.gz", 1, "", 2, false},
      {"pytorch1_inference_rank1.json.gz", 1, "", 1, false},
      {"a100_triton.json.gz", 0, "NVIDIA A100-PG509-200", 1, false},
      {"a100_alexnet_no_steps.json.gz", 0, "NVIDIA A100-PG509-200", 1, false},
      {"a100_80gb_recsys_rank0.json.gz", 0, "NVIDIA A100-SXM4-80GB", 5, false},
  };
  return traces;
}

TEST(HtaTraces, EveryTraceIsReadWithItsRankStepsAndGpu) {
  if (!fs::exists(kHta / "PROVENANCE"))
    GTEST_SKIP() << "the HolisticTraceAnalysis traces are not at " << kHta << " (TRAINSIM_KINETO_FIXTURES)";
  for (const auto& h : hta_traces()) {
    SCOPED_TRACE(h.file);
    const RankTrace t = read_trace_file(kHta / h.file, 0, table());
    EXPECT_EQ(t.rank, h.rank);
    EXPECT_EQ(t.gpu_name, h.gpu);
    EXPECT_EQ(t.steps.size(), h.steps);
    EXPECT_FALSE(t.kernels.empty());
    std::size_t in_steps = 0;
    for (const auto& k : t.kernels)
      in_steps += k.step >= 0;
    EXPECT_GT(in_steps, 0u);
    bool metadata = false;
    for (const auto& c : t.collectives)
      metadata = metadata || c.metadata;
    EXPECT_EQ(metadata, h.nccl_metadata);
  }
}

TEST(HtaTraces, KernelClassesAddUpToEachRanksBusyTime) {
  if (!fs::exists(kHta / "PROVENANCE"))
    GTEST_SKIP() << "the HolisticTraceAnalysis traces are not at " << kHta << " (TRAINSIM_KINETO_FIXTURES)";
  for (const auto& h : hta_traces()) {
    SCOPED_TRACE(h.file);
    const RankTrace t = read_trace_file(kHta / h.file, 0, table());
    const RankBreakdown b = break_down(t, table());
    for (const auto& s : b.steps) {
      // The classes' shares tile the union of the step's kernels ...
      const double shares = std::accumulate(s.busy_share_s.begin(), s.busy_share_s.end(), 0.0);
      EXPECT_NEAR(shares, s.busy_s, 1e-9 * std::max(1.0, s.busy_s * 1e6));
      // ... computed independently, from the kernels themselves.
      std::vector<std::pair<double, double>> spans;
      double durations = 0;
      for (const auto& k : t.kernels)
        if (k.step == s.step) {
          spans.emplace_back(k.start_us, k.end_us());
          durations += k.duration_us * 1e-6;
        }
      EXPECT_NEAR(s.busy_s, union_length(spans) * 1e-6, 1e-12);
      EXPECT_NEAR(std::accumulate(s.kernel_s.begin(), s.kernel_s.end(), 0.0), durations, 1e-9);
      EXPECT_LE(s.busy_s, durations + 1e-12);
      EXPECT_GE(s.communication_s + 1e-12, s.exposed_communication_s);
    }
  }
}

TEST(HtaTraces, ClassesOfTheRecsysTraceAreTheOnesItRan) {
  if (!fs::exists(kHta / "PROVENANCE"))
    GTEST_SKIP() << "the HolisticTraceAnalysis traces are not at " << kHta << " (TRAINSIM_KINETO_FIXTURES)";
  const RankTrace t = read_trace_file(kHta / "a100_80gb_recsys_rank0.json.gz", 0, table());
  const RankBreakdown b = break_down(t, table());
  const auto share = [&](const char* c) {
    return b.mean.kernel_s[static_cast<std::size_t>(table().find(c))];
  };
  // NCCL send/recv dominates its kernel time; CUTLASS GEMMs, Adam and
  // FBGEMM's embeddings are there.
  EXPECT_GT(share("nccl_p2p"), share("gemm"));
  EXPECT_GT(share("gemm"), 0);
  EXPECT_GT(share("optimizer"), 0);
  EXPECT_GT(share("embedding"), 0);
  EXPECT_GT(share("memcpy"), 0);
  EXPECT_TRUE(t.shapes_recorded);
  EXPECT_EQ(t.world_size, 16);
}

}  // namespace
}  // namespace trainsim::kineto
