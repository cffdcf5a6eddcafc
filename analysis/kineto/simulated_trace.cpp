#include "analysis/kineto/simulated_trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "workloads/kineto/op_shapes.hpp"

namespace trainsim::analysis {

using kineto::CollectiveInfo;
using kineto::CpuOp;
using kineto::Kernel;
using kineto::RankTrace;
using workloads::OpKind;
using workloads::TransformerOp;

std::int64_t kineto_stream_of(Stream stream) {
  return stream == Stream::compute ? 7 : 20 + 2 * static_cast<std::int64_t>(stream);
}

namespace {

constexpr double kUsPerSecond = 1e6;
// The host threads: the one running the model's ops and launching its
// kernels, and the one launching NCCL's (as DDP's and FSDP's hooks do), so
// launch intervals measure the model's pace alone.
constexpr std::int64_t kHostThread = 1000;
constexpr std::int64_t kCommThread = 1001;

// Kernel names by class, as the libraries name theirs (each classified back
// into its class by workloads/kineto/kernel_classes.yaml).
std::string kernel_name(const TransformerOp& op) {
  switch (op.kind) {
    case OpKind::matmul:
      return op.fp8 ? "sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_trainsim"
                    : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_trainsim";
    case OpKind::batched_matmul:
      return "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_batched_trainsim";
    case OpKind::attention:
      return op.pass == workloads::OpPass::forward ? "void flash_fwd_kernel<trainsim>(Flash_fwd_params)"
                                                   : "void flash_bwd_kernel<trainsim>(Flash_bwd_params)";
    case OpKind::elementwise:
      break;
  }
  const std::string c = kineto::kernel_class_of(op);
  if (c == "optimizer")
    return "void multi_tensor_apply_kernel<trainsim, AdamFunctor<float>>(int)";
  if (c == "embedding")
    return "void embedding_kernel<trainsim>(int)";
  if (c == "norm")
    return "void layer_norm_kernel<trainsim>(int)";
  return "void vectorized_elementwise_kernel<4, trainsim>(int)";
}

std::int64_t whole(double v) {
  return std::max<std::int64_t>(1, std::llround(v));
}

// The aten op whose recorded shapes give `op`'s work back
// (workloads/kineto/op_shapes.cpp reads them).
CpuOp cpu_op_of(const TransformerOp& op) {
  CpuOp c;
  const std::string bf16 = "c10::BFloat16";
  switch (op.kind) {
    case OpKind::matmul: {
      const std::string type = op.fp8 ? "c10::Float8_e4m3fn" : bf16;
      c.name = op.fp8 ? "aten::_scaled_mm" : "aten::mm";
      c.inputs = {{{whole(op.m), whole(op.k)}}, {{whole(op.k), whole(op.n)}}};
      c.types = {type, type};
      return c;
    }
    case OpKind::batched_matmul:
      c.name = "aten::bmm";
      c.inputs = {{{whole(op.batch), whole(op.m), whole(op.k)}},
                  {{whole(op.batch), whole(op.k), whole(op.n)}}};
      c.types = {bf16, bf16};
      return c;
    case OpKind::attention: {
      const bool forward = op.pass == workloads::OpPass::forward;
      // q and out over batch x heads, k and v over the key/value heads the
      // op's bytes imply (q, k, v and out read / written once forward,
      // twice backward).
      const double io = forward ? op.bytes : op.bytes / 2;
      const double kv = std::max(1.0, io / (4 * op.m * op.k) - op.batch);
      const kineto::Shape q{1, whole(op.batch), whole(op.m), whole(op.k)};
      const kineto::Shape k{1, whole(kv), whole(op.m), whole(op.k)};
      if (forward) {
        c.name = "aten::_scaled_dot_product_flash_attention";
        c.inputs = {{q}, {k}, {k}, {}, {}, {}, {}};
        c.types = {bf16, bf16, bf16, "Scalar", "Scalar", "Scalar", ""};
        c.concrete = {"", "", "", "0.", "True", "False", ""};
      } else {
        c.name = "aten::_scaled_dot_product_flash_attention_backward";
        c.inputs = {{q}, {q}, {k}, {k}, {q}};
        c.types = {bf16, bf16, bf16, bf16, bf16};
        c.concrete = {"", "", "", "", "", "", "", "", "", "", "0.", "True"};
      }
      return c;
    }
    case OpKind::elementwise:
      break;
  }
  c.name = "trainsim::" + op.name;
  // One bf16 tensor, read and written back: 4 bytes an element.
  if (op.bytes > 0) {
    c.inputs = {{{whole(op.bytes / 4)}}};
    c.types = {bf16};
  }
  return c;
}

std::string nccl_kernel_name(workloads::CollectiveOp op) {
  switch (op) {
    case workloads::CollectiveOp::all_reduce:
      return "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(trainsim)";
    case workloads::CollectiveOp::reduce_scatter:
      return "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(trainsim)";
    case workloads::CollectiveOp::all_gather:
      return "ncclDevKernel_AllGather_RING_LL(trainsim)";
    case workloads::CollectiveOp::broadcast:
      return "ncclDevKernel_Broadcast_RING_LL(trainsim)";
    case workloads::CollectiveOp::all_to_all:
    case workloads::CollectiveOp::send_recv:
      return "ncclDevKernel_SendRecv(trainsim)";
  }
  return "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(trainsim)";
}

// PyTorch's "Collective name" and message sizes. trainsim's bytes are
// nccl-tests' size: each rank's buffer for all-reduce, the gathered output
// of all-gather, the scattered input of reduce-scatter.
CollectiveInfo collective_info(const workloads::Task& task, const std::vector<int>& ranks, int group) {
  CollectiveInfo c;
  c.metadata = true;
  c.dtype = "BFloat16";
  c.group_size = static_cast<int>(ranks.size());
  c.group_ranks = ranks;
  c.group_name = std::to_string(group + 1);
  const std::int64_t elements = whole(task.bytes / 2);
  const std::int64_t share = whole(task.bytes / 2 / std::max<std::size_t>(1, ranks.size()));
  c.in_elements = c.out_elements = elements;
  switch (task.op) {
    case workloads::CollectiveOp::all_reduce:
      c.collective = "allreduce";
      break;
    case workloads::CollectiveOp::all_gather:
      c.collective = "allgather";
      c.in_elements = share;
      break;
    case workloads::CollectiveOp::reduce_scatter:
      c.collective = "reduce_scatter";
      c.out_elements = share;
      break;
    case workloads::CollectiveOp::broadcast:
      c.collective = "broadcast";
      break;
    case workloads::CollectiveOp::all_to_all:
      c.collective = "all_to_all";
      break;
    case workloads::CollectiveOp::send_recv:
      c.collective = "sendrecv";
      break;
  }
  return c;
}

class TraceBuilder {
 public:
  TraceBuilder(RankTrace& t, const kineto::KernelClassTable& classes) : t_(t), classes_(classes) {}

  int intern(const std::string& name) {
    const auto [it, added] = names_.emplace(name, static_cast<std::uint32_t>(t_.names.size()));
    if (added)
      t_.names.push_back(name);
    return static_cast<int>(it->second);
  }
  int add_op(CpuOp op, double start_us, double duration_us) {
    op.external_id = next_external_++;
    op.thread = kHostThread;  // the thread that launches its kernels
    op.start_us = start_us;
    op.duration_us = duration_us;
    t_.ops.push_back(std::move(op));
    return static_cast<int>(t_.ops.size()) - 1;
  }
  int add_collective(CollectiveInfo c) {
    t_.collectives.push_back(std::move(c));
    return static_cast<int>(t_.collectives.size()) - 1;
  }
  void add_kernel(const std::string& name, std::int64_t stream, double start_us, double duration_us, int op,
                  int collective, double launch_us, double launch_duration_us) {
    Kernel k;
    k.name = static_cast<std::uint32_t>(intern(name));
    k.kernel_class = classes_.classify(name);
    k.device = device_;
    k.stream = stream;
    k.start_us = start_us;
    k.duration_us = duration_us;
    k.correlation = next_correlation_++;
    k.op = op;
    k.external_id = op >= 0 ? t_.ops[static_cast<std::size_t>(op)].external_id : -1;
    k.collective = collective;
    k.step = 0;
    k.launch = static_cast<int>(t_.launches.size());
    t_.launches.push_back(
        {collective >= 0 ? kCommThread : kHostThread, launch_us, launch_duration_us, k.correlation});
    t_.kernels.push_back(k);
  }
  void set_device(int device) { device_ = device; }

 private:
  RankTrace& t_;
  const kineto::KernelClassTable& classes_;
  std::map<std::string, std::uint32_t> names_;
  std::int64_t next_external_ = 1;
  std::int64_t next_correlation_ = 1;
  int device_ = 0;
};

// Lays a compute task's kernels into [start, end) (see the header).
void add_compute(TraceBuilder& b, const kineto::TaskOps& ops, double start_s, double end_s) {
  const double total = ops.total_s();
  const double scale = total > 0 ? (end_s - start_s) / total : 0;
  const double oh = ops.host_overhead_s * scale;
  double pass_start = start_s;
  for (std::size_t p = 0; p < ops.pass_time_s.size(); ++p) {
    const double window = ops.pass_time_s[p] * scale;
    // The pass's kernels: (op index, duration), in order.
    std::vector<std::pair<std::size_t, double>> kernels;
    for (std::size_t i = 0; i < ops.ops.size(); ++i) {
      const auto& o = ops.ops[i];
      if (o.pass != static_cast<int>(p))
        continue;
      const int n = std::max(1, o.op.kernels);
      for (int j = 0; j < n; ++j)
        kernels.emplace_back(i, o.duration_s * scale / n);
    }
    double device = 0;
    for (const auto& k : kernels)
      device += k.second;
    std::vector<double> starts(kernels.size());
    double end = pass_start;
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      starts[j] = std::max(pass_start + static_cast<double>(j) * oh, end);
      end = starts[j] + kernels[j].second;
    }
    if (end > pass_start + window * (1 + 1e-9) + 1e-12) {
      const double gap = std::max(0.0, window - device) / static_cast<double>(kernels.size());
      end = pass_start;
      for (std::size_t j = 0; j < kernels.size(); ++j) {
        starts[j] = end + (j == 0 ? 0 : gap);
        end = starts[j] + kernels[j].second;
      }
    }
    // One CPU op per trainsim op, spanning its launches.
    std::map<std::size_t, int> op_index;
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      const std::size_t i = kernels[j].first;
      const double launch = pass_start + static_cast<double>(j) * oh;
      if (!op_index.count(i))
        op_index[i] = b.add_op(cpu_op_of(ops.ops[i].op), launch * kUsPerSecond,
                               std::max(1, ops.ops[i].op.kernels) * std::max(oh, 1e-9) * kUsPerSecond * 0.9);
      b.add_kernel(kernel_name(ops.ops[i].op), kineto_stream_of(Stream::compute), starts[j] * kUsPerSecond,
                   kernels[j].second * kUsPerSecond, op_index[i], -1, launch * kUsPerSecond,
                   std::min(oh, 5e-6) * 0.5 * kUsPerSecond);
    }
    pass_start += window;
  }
}

}  // namespace

std::vector<RankTrace> simulated_traces(const workloads::TaskGraph& graph, const Timeline& timeline,
                                        const platforms::ClusterSpec& cluster,
                                        const kineto::KernelClassTable& classes,
                                        const SimulatedTraceOptions& options) {
  std::vector<int> gpus = options.gpus;
  if (gpus.empty())
    for (int g = 0; g < graph.gpu_count; ++g)
      gpus.push_back(g);
  std::map<int, std::size_t> slot;
  std::vector<RankTrace> traces(gpus.size());
  std::vector<TraceBuilder> builders;
  builders.reserve(gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const int g = gpus[i];
    slot[g] = i;
    RankTrace& t = traces[i];
    t.path = fmt::format("{}.rank{}.pt.trace.json", options.name, g);
    t.rank = g;
    t.rank_recorded = true;
    t.world_size = graph.gpu_count;
    t.backend = "nccl";
    const auto& gpu = cluster.gpu_of(g);
    t.gpu_name = gpu.name;
    t.gpu_memory_bytes = gpu.hbm_bytes;
    t.shapes_recorded = options.kernels != nullptr;
    t.steps.push_back({1, 0, timeline.end_s * kUsPerSecond});
    std::vector<int> world(static_cast<std::size_t>(graph.gpu_count));
    for (int r = 0; r < graph.gpu_count; ++r)
      world[static_cast<std::size_t>(r)] = r;
    t.groups.push_back({"0", "default_pg", world});
    for (std::size_t k = 0; k < graph.groups.size(); ++k)
      if (std::find(graph.groups[k].begin(), graph.groups[k].end(), g) != graph.groups[k].end())
        t.groups.push_back({std::to_string(k + 1), "trainsim group", graph.groups[k]});
    builders.emplace_back(t, classes);
    builders.back().set_device(cluster.locate(g).local_rank);
  }
  // Records in time order, so each rank's ops and launches are too.
  std::vector<TaskRecord> records;
  for (const auto& r : timeline.records)
    if (slot.count(r.gpu) || graph[r.task].kind == workloads::TaskKind::send)
      records.push_back(r);
  std::stable_sort(records.begin(), records.end(),
                   [](const TaskRecord& a, const TaskRecord& b) { return a.start_s < b.start_s; });
  for (const TaskRecord& record : records) {
    const TaskRecord* r = &record;
    const workloads::Task& task = graph[r->task];
    const double duration = r->end_s - r->start_s;
    const double host_us = r->start_s * kUsPerSecond;
    switch (task.kind) {
      case workloads::TaskKind::send: {
        // The sender's and the receiver's kernels, at the same times.
        for (const auto& [gpu, name] : {std::pair{task.gpu, "send"}, std::pair{task.peer, "recv"}}) {
          const auto it = slot.find(gpu);
          if (it == slot.end())
            continue;
          TraceBuilder& b = builders[it->second];
          CollectiveInfo c;
          c.metadata = true;
          c.collective = name;
          c.dtype = "BFloat16";
          c.in_elements = c.out_elements = whole(task.bytes / 2);
          c.group_size = 2;
          c.group_ranks = {task.gpu, task.peer};
          c.group_name = fmt::format("p2p {}-{}", task.gpu, task.peer);
          b.add_kernel("ncclDevKernel_SendRecv(trainsim)", kineto_stream_of(r->stream),
                       r->start_s * kUsPerSecond, duration * kUsPerSecond, -1, b.add_collective(std::move(c)),
                       host_us, 1);
        }
        break;
      }
      case workloads::TaskKind::collective: {
        TraceBuilder& b = builders[slot.at(r->gpu)];
        const auto& ranks = graph.groups.at(static_cast<std::size_t>(task.group));
        const int fold = std::max(1, task.fold);
        for (int f = 0; f < fold; ++f)
          b.add_kernel(nccl_kernel_name(task.op), kineto_stream_of(r->stream),
                       (r->start_s + duration * f / fold) * kUsPerSecond, duration / fold * kUsPerSecond, -1,
                       b.add_collective(collective_info(task, ranks, task.group)), host_us, 1);
        break;
      }
      default: {
        TraceBuilder& b = builders[slot.at(r->gpu)];
        kineto::TaskOps ops;
        if (options.kernels != nullptr)
          ops = options.kernels->of(task, cluster.gpu_of(r->gpu));
        if (ops.ops.empty() || ops.total_s() <= 0) {
          b.add_kernel("trainsim::compute", kineto_stream_of(Stream::compute), r->start_s * kUsPerSecond,
                       duration * kUsPerSecond, -1, -1, host_us, 1);
          break;
        }
        add_compute(b, ops, r->start_s, r->end_s);
        break;
      }
    }
  }
  for (auto& t : traces) {
    std::stable_sort(t.kernels.begin(), t.kernels.end(),
                     [](const Kernel& a, const Kernel& b) { return a.start_us < b.start_us; });
  }
  return traces;
}

}  // namespace trainsim::analysis
