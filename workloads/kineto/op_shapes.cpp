#include "workloads/kineto/op_shapes.hpp"

#include <algorithm>
#include <numeric>
#include <unordered_map>

namespace trainsim::kineto {

std::string_view to_string(WorkKind kind) {
  switch (kind) {
    case WorkKind::none:
      return "none";
    case WorkKind::matmul:
      return "matmul";
    case WorkKind::batched_matmul:
      return "batched_matmul";
    case WorkKind::attention_forward:
      return "attention_forward";
    case WorkKind::attention_backward:
      return "attention_backward";
    case WorkKind::memory:
      return "memory";
  }
  return "none";
}

double element_bytes(const std::string& type) {
  static const std::unordered_map<std::string, double> sizes = {
      {"c10::BFloat16", 2},
      {"BFloat16", 2},
      {"c10::Half", 2},
      {"Half", 2},
      {"float", 4},
      {"Float", 4},
      {"double", 8},
      {"Double", 8},
      {"long int", 8},
      {"long", 8},
      {"int", 4},
      {"Int", 4},
      {"short int", 2},
      {"bool", 1},
      {"Bool", 1},
      {"unsigned char", 1},
      {"signed char", 1},
      {"c10::Float8_e4m3fn", 1},
      {"c10::Float8_e5m2", 1},
      {"c10::Float8_e4m3fnuz", 1},
      {"c10::Float8_e5m2fnuz", 1},
      {"c10::complex<float>", 8},
      {"TensorList", 4},
      {"GenericList", 4},
  };
  const auto it = sizes.find(type);
  return it == sizes.end() ? 0.0 : it->second;
}

namespace {

std::string dtype_of(const std::string& type) {
  if (type.find("BFloat16") != std::string::npos)
    return "bf16";
  if (type.find("Half") != std::string::npos)
    return "fp16";
  if (type.find("Float8") != std::string::npos)
    return "fp8";
  if (type == "float" || type == "Float")
    return "fp32";
  return "";
}

double elements(const Shape& s) {
  double n = 1;
  for (auto d : s)
    n *= static_cast<double>(d);
  return n;
}

// The one tensor of input i, or nullptr.
const Shape* tensor(const CpuOp& op, std::size_t i) {
  if (i >= op.inputs.size() || op.inputs[i].size() != 1)
    return nullptr;
  return &op.inputs[i].front();
}

std::string type_at(const CpuOp& op, std::size_t i) {
  return i < op.types.size() ? op.types[i] : "";
}

OpWork gemm(double m, double n, double k, double batch, const std::string& type, WorkKind kind) {
  OpWork w;
  w.kind = kind;
  w.m = m;
  w.n = n;
  w.k = k;
  w.batch = batch;
  w.flops = 2 * batch * m * n * k;
  w.dtype = dtype_of(type);
  // Both operands read and the output written once (transformer_ops.cpp);
  // an FP8 GEMM writes a 16-bit output (workloads/precision.hpp).
  const double size = std::max(1.0, element_bytes(type));
  w.bytes = batch * (size * (m * k + k * n) + std::max(2.0, size) * m * n);
  return w;
}

OpWork matmul_work(const CpuOp& op) {
  const std::string& name = op.name;
  // The two operands' positions.
  std::size_t a = 0, b = 1;
  bool linear = false;
  if (name == "aten::addmm" || name == "aten::baddbmm" || name == "aten::addbmm") {
    a = 1;
    b = 2;
  } else if (name == "aten::linear") {
    linear = true;
  } else if (name != "aten::mm" && name != "aten::bmm" && name != "aten::matmul" &&
             name != "aten::_scaled_mm" && name != "aten::_int_mm") {
    return {};
  }
  const Shape* A = tensor(op, a);
  const Shape* B = tensor(op, b);
  if (A == nullptr || B == nullptr || A->size() < 2 || B->empty())
    return {};
  const double k = static_cast<double>(A->back());
  if (linear) {
    // x [..., k] times W^T, W [n, k].
    if (B->size() != 2)
      return {};
    const double rows = elements(*A) / k;
    return gemm(rows, static_cast<double>((*B)[0]), k, 1, type_at(op, a), WorkKind::matmul);
  }
  if (B->size() == 2 && A->size() >= 2) {
    // A [..., m, k] x B [k, n]: the leading dims fold into m (what cuBLAS runs).
    const double rows = elements(*A) / k;
    return gemm(rows, static_cast<double>(B->back()), k, 1, type_at(op, a), WorkKind::matmul);
  }
  if (A->size() >= 3 && B->size() == A->size()) {
    const double m = static_cast<double>((*A)[A->size() - 2]);
    const double batch = elements(*A) / (m * k);
    return gemm(m, static_cast<double>(B->back()), k, batch, type_at(op, a),
                batch > 1 ? WorkKind::batched_matmul : WorkKind::matmul);
  }
  return {};
}

struct AttentionOp {
  std::string_view name;
  bool backward;
  bool sdpa_layout;  // q [b, h, s, d]; otherwise [b, s, h, d]
  std::size_t q;     // input index of q (after grad_out in a backward)
  int causal_index;  // "Concrete Inputs" index of is_causal, -1 if none
};

const AttentionOp* attention_op(const std::string& name) {
  static const AttentionOp ops[] = {
      {"aten::_scaled_dot_product_flash_attention", false, true, 0, 4},
      {"aten::_scaled_dot_product_flash_attention_for_cpu", false, true, 0, 4},
      {"aten::_scaled_dot_product_efficient_attention", false, true, 0, 6},
      {"aten::_scaled_dot_product_cudnn_attention", false, true, 0, 6},
      {"aten::_flash_attention_forward", false, false, 0, 8},
      {"aten::_efficient_attention_forward", false, false, 0, 9},
      {"flash_attn::_flash_attn_forward", false, false, 0, 5},
      {"FlashAttnFunc", false, false, 0, -1},
      {"aten::_scaled_dot_product_flash_attention_backward", true, true, 1, 11},
      {"aten::_scaled_dot_product_efficient_attention_backward", true, true, 1, 10},
      {"aten::_scaled_dot_product_cudnn_attention_backward", true, true, 1, 10},
      {"aten::_flash_attention_backward", true, false, 1, 11},
      {"aten::_efficient_attention_backward", true, false, 1, 12},
      {"flash_attn::_flash_attn_backward", true, false, 1, 10},
      {"FlashAttnFuncBackward", true, false, 1, -1},
  };
  for (const auto& op : ops)
    if (op.name == name)
      return &op;
  return nullptr;
}

OpWork attention_work(const CpuOp& op) {
  const AttentionOp* a = attention_op(op.name);
  if (a == nullptr)
    return {};
  const Shape* q = tensor(op, a->q);
  const Shape* k = tensor(op, a->q + 1);
  if (q == nullptr || q->size() != 4)
    return {};
  const double b = static_cast<double>((*q)[0]);
  const double heads = static_cast<double>(a->sdpa_layout ? (*q)[1] : (*q)[2]);
  const double s_q = static_cast<double>(a->sdpa_layout ? (*q)[2] : (*q)[1]);
  const double d = static_cast<double>((*q)[3]);
  double s_k = s_q, kv_heads = heads;
  if (k != nullptr && k->size() == 4) {
    s_k = static_cast<double>(a->sdpa_layout ? (*k)[2] : (*k)[1]);
    kv_heads = static_cast<double>(a->sdpa_layout ? (*k)[1] : (*k)[2]);
  }
  OpWork w;
  w.kind = a->backward ? WorkKind::attention_backward : WorkKind::attention_forward;
  w.m = s_q;
  w.n = s_k;
  w.k = d;
  w.batch = b * heads;
  w.dtype = dtype_of(type_at(op, a->q));
  const std::size_t c = static_cast<std::size_t>(a->causal_index);
  if (a->causal_index >= 0 && c < op.concrete.size() &&
      (op.concrete[c] == "True" || op.concrete[c] == "False")) {
    w.causal = op.concrete[c] == "True";
  } else {
    w.causal_assumed = true;
  }
  // FlashAttention skips the blocks above a causal mask's diagonal: half
  // the work (transformer_ops.cpp); the backward runs 5 matmuls to the
  // forward's 2.
  const double full = 4 * w.batch * s_q * s_k * d;
  w.flops = (a->backward ? 2.5 : 1.0) * full * (w.causal ? 0.5 : 1.0);
  const double size = std::max(1.0, element_bytes(type_at(op, a->q)));
  // q and the output (heads), k and v (kv heads); the backward reads and
  // writes each once more (their gradients).
  const double io = size * b * d * (2 * s_q * heads + 2 * s_k * kv_heads);
  w.bytes = (a->backward ? 2 : 1) * io;
  return w;
}

// What an op writes besides reading its inputs: nothing for a copy into
// its first input (copy_: read the source, write the destination, both
// inputs) or a reduction (a small output); only its first input for a fill;
// its first input again for any other in-place op; else an output the size
// of its largest input.
enum class Output { largest, first, none, only_first };

Output output_of(const std::string& name) {
  static const char* reductions[] = {"aten::sum",    "aten::mean", "aten::norm", "aten::linalg_vector_norm",
                                     "aten::amax",   "aten::amin", "aten::max",  "aten::min",
                                     "aten::argmax", "aten::var",  "aten::std",  "aten::_foreach_norm",
                                     "aten::copy_"};
  for (const char* r : reductions)
    if (name == r)
      return Output::none;
  if (name == "aten::fill_" || name == "aten::zero_" || name == "aten::normal_" || name == "aten::uniform_")
    return Output::only_first;
  if (!name.empty() && name.back() == '_')
    return Output::first;
  return Output::largest;
}

OpWork memory_work(const CpuOp& op) {
  double bytes = 0, largest = 0, first = -1;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    const double size = element_bytes(type_at(op, i));
    if (size <= 0)
      continue;
    double input = 0;
    for (const auto& shape : op.inputs[i])
      input += size * elements(shape);
    if (first < 0 && !op.inputs[i].empty())
      first = input;
    bytes += input;
    largest = std::max(largest, input);
  }
  if (first < 0 || bytes <= 0)
    return {};
  OpWork w;
  w.kind = WorkKind::memory;
  switch (output_of(op.name)) {
    case Output::largest:
      w.bytes = bytes + largest;
      break;
    case Output::first:
      w.bytes = bytes + first;
      break;
    case Output::none:
      w.bytes = bytes;
      break;
    case Output::only_first:
      w.bytes = first;
      break;
  }
  return w;
}

}  // namespace

OpWork op_work(const CpuOp& op, KernelRole role) {
  switch (role) {
    case KernelRole::gemm:
      return matmul_work(op);
    case KernelRole::attention:
      return attention_work(op);
    case KernelRole::memory:
      return memory_work(op);
    case KernelRole::compute:
    case KernelRole::copy:
    case KernelRole::communication:
      return {};
  }
  return {};
}

}  // namespace trainsim::kineto
