#include "platforms/efficiency_profile_writer.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <sstream>

namespace trainsim::platforms {
namespace {

std::string number(double v) {
  return fmt::format("{:.6g}", v);
}

// Sizes through the unit parser's "B" suffix: the curve's x for bytes.
std::string bytes(double v) {
  return fmt::format("{:.6g}B", v);
}

void curve(std::ostringstream& out, const std::string& indent, const char* key, const Curve& c,
           bool is_bytes) {
  out << indent << key << ":\n";
  for (const auto& [x, f] : c.points())
    out << indent << "  - [" << (is_bytes ? bytes(x) : number(x)) << ", " << number(f) << "]\n";
}

void matmul(std::ostringstream& out, const char* key, const MatmulEfficiency& m) {
  out << key << ":\n  peak_fraction: " << number(m.peak_fraction) << "\n";
  curve(out, "  ", "output_elements", m.output_elements, false);
  curve(out, "  ", "reduction_depth", m.reduction_depth, false);
}

void attention(std::ostringstream& out, const char* key, const AttentionKernelEfficiency& a) {
  out << "  " << key << ":\n    peak_fraction: " << number(a.peak_fraction) << "\n";
  curve(out, "    ", "seq_len", a.seq_len, false);
  curve(out, "    ", "head_dim", a.head_dim, false);
}

// A YAML scalar for free text (quoted as yaml-cpp would).
std::string text(const std::string& s) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << s;
  return e.c_str();
}

}  // namespace

std::string efficiency_profile_yaml(const EfficiencyProfile& p, const std::string& comment) {
  std::ostringstream out;
  std::istringstream lines(comment);
  for (std::string line; std::getline(lines, line);)
    out << (line.empty() ? "#" : "# " + line) << "\n";
  out << "name: " << text(p.name) << "\ngpus: [";
  for (std::size_t i = 0; i < p.gpus.size(); ++i)
    out << (i ? ", " : "") << text(p.gpus[i]);
  out << "]\nsource: " << text(p.source) << "\n";
  matmul(out, "matmul", p.matmul);
  matmul(out, "batched_matmul", p.batched_matmul);
  if (p.matmul_fp8)
    matmul(out, "matmul_fp8", *p.matmul_fp8);
  if (p.matmul_mxfp8)
    matmul(out, "matmul_mxfp8", *p.matmul_mxfp8);
  out << "flash_attention:\n";
  attention(out, "forward", p.flash_forward);
  attention(out, "backward", p.flash_backward);
  out << "memory:\n  peak_fraction: " << number(p.memory.peak_fraction) << "\n";
  curve(out, "  ", "bytes", p.memory.bytes, true);
  out << "host_overhead_per_kernel: " << number(p.host_overhead_per_kernel_s * 1e6) << "us\n";
  return out.str();
}

}  // namespace trainsim::platforms
