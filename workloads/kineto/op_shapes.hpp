#pragma once
// The work a traced CPU op gave its kernels, from the shapes PyTorch
// recorded (record_shapes=True): a GEMM's [m, k] x [k, n] (x batch), a fused
// attention's batch x heads, sequence and head dimension, an HBM-bound
// kernel's bytes. The quantities are trainsim's own (workloads/transformer_ops.hpp):
// the same op timed by trainsim's cost model and measured in a trace are
// described alike, which is what lets `trainsim calibrate` fit the
// efficiency curves to a trace.
//
//   aten::mm / addmm          [m, k] x [k, n]            matmul
//   aten::linear / matmul     [..., k] x [n, k]          matmul, m = product of the leading dims
//   aten::bmm / baddbmm       [b, m, k] x [b, k, n]      batched_matmul
//   aten::_scaled_mm          [m, k] x [k, n], FP8       matmul (fp8)
//   SDPA flash / efficient / cuDNN, _flash_attention_*, flash_attn's ops:
//                             q [b, h, s, d] (SDPA) or [b, s, h, d] (flash_attn, _flash_attention_*)
//                             forward 4 b h s_q s_k d FLOPs, backward 10 (2.5 x), halved when causal
//   any other op of a memory-role kernel: bytes of every tensor input plus
//                             an output the size of the largest input; an
//                             in-place op (name ending in '_') writes its first
//                             input back instead, a copy_ or a reduction writes
//                             nothing more, a fill_ / zero_ only writes
#include <string>

#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::kineto {

enum class WorkKind { none, matmul, batched_matmul, attention_forward, attention_backward, memory };
std::string_view to_string(WorkKind kind);

struct OpWork {
  WorkKind kind = WorkKind::none;
  // Matmuls: [m, k] x [k, n], `batch` times. Attention: m = query sequence
  // length, n = key sequence length, k = head dimension, batch = b x heads.
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0;
  double bytes = 0;
  // Element type of the GEMM or attention inputs: "bf16", "fp16", "fp32",
  // "fp8", or "" when not recorded.
  std::string dtype;
  bool causal = true;
  // The causal flag was not recorded: assumed (training a decoder).
  bool causal_assumed = false;
};

// What `op` computed, for a kernel of role `role` (a GEMM op launched by a
// gemm-role kernel, an attention op by an attention-role one, any op with
// tensor inputs by a memory-role one); kind none when the op's name or its
// recorded shapes say nothing usable.
OpWork op_work(const CpuOp& op, KernelRole role);

// Bytes of one element of a recorded type ("c10::BFloat16" 2, "float" 4,
// "c10::Float8_e4m3fn" 1, ...); 0 for a type that is no tensor's
// ("Scalar", "") and 4 for a tensor list's ("TensorList": fp32 master
// weights and optimizer states, as the optimizer's).
double element_bytes(const std::string& type);

}  // namespace trainsim::kineto
