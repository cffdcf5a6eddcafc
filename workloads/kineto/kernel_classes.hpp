#pragma once
// The classes of GPU kernels in a PyTorch profiler trace (GEMMs, fused
// attention, NCCL collectives and point-to-point, normalisations, the
// optimizer, element-wise work, copies, ...), recognised by the kernel's name.
// The table is data: workloads/kineto/kernel_classes.yaml, compiled into the
// binary; `trainsim calibrate --classes FILE` reads another one in the same
// format. Each class has a role that says what trainsim does with it.
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace trainsim::kineto {

enum class KernelRole : std::uint8_t {
  gemm,           // dense / batched matrix products: the matmul curves
  attention,      // fused attention: the flash_attention curves
  memory,         // HBM-bound work: the memory curve
  compute,        // other GPU work (not fitted)
  copy,           // memcpy / memset
  communication,  // NCCL / RCCL kernels: the collective constants
};
std::string_view to_string(KernelRole role);
// Compute roles keep a GPU busy with work of the model; copies and
// communication are what overlap with it.
inline bool is_compute(KernelRole role) {
  return role == KernelRole::gemm || role == KernelRole::attention || role == KernelRole::memory ||
         role == KernelRole::compute;
}

struct KernelClass {
  std::string name;  // "gemm", "nccl_collective", ... (a stable key for files)
  KernelRole role = KernelRole::compute;
  std::string description;
  std::vector<std::string> patterns;  // as written
  std::vector<std::regex> regexes;    // compiled
};

class KernelClassTable {
 public:
  // Parses a table (`source` names it in messages). Throws
  // platforms::InputError naming the file, line, key and what was expected:
  // an unknown key or role, a pattern that is not a regular expression, a
  // name given twice, no classes, or a last class that does not match every
  // name (the catch-all, `patterns: ['']`).
  static KernelClassTable parse(std::string_view yaml_text, const std::string& source);
  // workloads/kineto/kernel_classes.yaml, parsed once.
  static const KernelClassTable& builtin();

  const std::vector<KernelClass>& classes() const { return classes_; }
  const KernelClass& at(int index) const { return classes_.at(static_cast<std::size_t>(index)); }
  int size() const { return static_cast<int>(classes_.size()); }
  // The index of the first class whose pattern matches `kernel_name` (the
  // last class, the catch-all, when none before it does).
  int classify(std::string_view kernel_name) const;
  // The index of the class called `name`, or -1.
  int find(std::string_view name) const;
  // The table's file, for messages ("workloads/kineto/kernel_classes.yaml").
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<KernelClass> classes_;
};

// Classifies names through a table, remembering each distinct name's class:
// a trace names a few hundred distinct kernels tens of thousands of times,
// and the names of templated kernels run to kilobytes.
class KernelClassifier {
 public:
  explicit KernelClassifier(const KernelClassTable& table) : table_(&table) {}
  int classify(const std::string& kernel_name);
  const KernelClassTable& table() const { return *table_; }

 private:
  const KernelClassTable* table_;
  std::unordered_map<std::string, int> seen_;
};

}  // namespace trainsim::kineto
