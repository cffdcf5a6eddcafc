#pragma once
// Checks every schedule generator must pass, independent of timing: each
// rank runs every (chunk, micro-batch) once forward and once backward (full,
// or split into input and weight gradient), and the lists can run to the end
// under the pipeline's data dependencies (no deadlock).
#include <string>
#include <vector>

#include "workloads/schedule.hpp"

namespace trainsim::testing {

inline std::vector<std::string> rank_texts(const workloads::PipelineSchedule& s) {
  std::vector<std::string> out;
  for (const auto& ops : s.per_rank)
    out.push_back(workloads::to_string(ops, s.chunks));
  return out;
}

// Empty when every (chunk, micro-batch) of every rank has exactly one F and
// either one B or one I and one W; else what is wrong.
inline std::string op_count_problem(const workloads::PipelineSchedule& s) {
  using workloads::PipeOpKind;
  const int m = s.micro_batches_of_chunk();  // DualPipe: m / 2 per direction
  for (int r = 0; r < s.ranks; ++r) {
    std::vector<int> f(s.chunks * m), b(f.size()), i(f.size()), w(f.size());
    for (const auto& op : s.per_rank[r]) {
      const int k = op.chunk * m + op.micro_batch;
      if (op.chunk < 0 || op.chunk >= s.chunks || op.micro_batch < 0 || op.micro_batch >= m)
        return "rank " + std::to_string(r) + ": op out of range";
      (op.kind == PipeOpKind::forward          ? f
       : op.kind == PipeOpKind::backward       ? b
       : op.kind == PipeOpKind::backward_input ? i
                                               : w)[k]++;
    }
    for (std::size_t k = 0; k < f.size(); ++k)
      if (f[k] != 1 || !((b[k] == 1 && i[k] == 0 && w[k] == 0) || (b[k] == 0 && i[k] == 1 && w[k] == 1)))
        return "rank " + std::to_string(r) + ": chunk " + std::to_string(k / m) + " micro-batch " +
               std::to_string(k % m) + " does not run exactly once each way";
  }
  return "";
}

// Runs the lists in order, each op as soon as its inputs exist (F after the
// previous virtual stage's F, B or I after the next virtual stage's B or I,
// or after its own F on the last virtual stage; W after its I). DualPipe's
// directions each have their own first and last virtual stage. True when
// every op ran.
inline bool runs_to_completion(const workloads::PipelineSchedule& s) {
  using workloads::PipeOpKind;
  const int stages = s.virtual_stages(), m = s.micro_batches_of_chunk();
  std::vector<char> f(stages * m, 0), b(stages * m, 0);
  std::vector<std::size_t> next(s.ranks, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < s.ranks; ++r) {
      const auto& ops = s.per_rank[r];
      while (next[r] < ops.size()) {
        const auto& op = ops[next[r]];
        const int vs = s.virtual_stage(r, op.chunk), at = vs * m + op.micro_batch;
        bool ready = false;
        switch (op.kind) {
          case PipeOpKind::forward:
            ready = s.is_first_stage(vs) || f[at - m];
            break;
          case PipeOpKind::backward:
          case PipeOpKind::backward_input:
            ready = f[at] && (s.is_last_stage(vs) || b[at + m]);
            break;
          case PipeOpKind::backward_weight:
            ready = b[at];
            break;
        }
        if (!ready)
          break;
        if (op.kind == PipeOpKind::forward)
          f[at] = 1;
        if (op.kind == PipeOpKind::backward || op.kind == PipeOpKind::backward_input)
          b[at] = 1;
        ++next[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < s.ranks; ++r)
    if (next[r] != s.per_rank[r].size())
      return false;
  return true;
}

}  // namespace trainsim::testing
