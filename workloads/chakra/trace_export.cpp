#include "workloads/chakra/trace_export.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <queue>

#include <nlohmann/json.hpp>

#include "platforms/input_error.hpp"
#include "workloads/chakra/et_file.hpp"
#include "workloads/chakra/trainsim_attributes.hpp"

namespace trainsim::chakra {
namespace fs = std::filesystem;
namespace {

using workloads::CollectiveOp;
using workloads::Task;
using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

CommType comm_type_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return CommType::all_reduce;
    case CollectiveOp::reduce_scatter:
      return CommType::reduce_scatter;
    case CollectiveOp::all_gather:
      return CommType::all_gather;
    case CollectiveOp::broadcast:
      return CommType::broadcast;
    case CollectiveOp::all_to_all:
    case CollectiveOp::send_recv:
      break;
  }
  return CommType::all_to_all;
}

std::int64_t whole(double value) {
  return static_cast<std::int64_t>(std::llround(value));
}

// Kahn's algorithm, smallest task id first among the ready ones: a
// deterministic order close to the builder's.
std::vector<TaskId> topological_order(const TaskGraph& graph) {
  std::vector<int> remaining(graph.size());
  std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> ready;
  for (TaskId v = 0; v < graph.size(); ++v)
    if ((remaining[v] =
             static_cast<int>(boost::in_degree(workloads::task_vertex(v), graph.dependencies()))) == 0)
      ready.push(v);
  std::vector<TaskId> order;
  while (!ready.empty()) {
    const TaskId v = ready.top();
    ready.pop();
    order.push_back(v);
    for (auto [e, end] = boost::out_edges(workloads::task_vertex(v), graph.dependencies()); e != end; ++e)
      if (--remaining[boost::target(*e, graph.dependencies())] == 0)
        ready.push(boost::target(*e, graph.dependencies()));
  }
  if (order.size() != graph.size())
    throw std::logic_error("exporting a task graph with a cycle");
  return order;
}

class Exporter {
 public:
  Exporter(const TaskGraph& graph, std::string_view producer) : graph_(graph), faces_(graph.size()) {
    result_.ranks.resize(static_cast<std::size_t>(graph.gpu_count));
    for (auto& rank : result_.ranks) {
      rank.version = "0.0.4";
      rank.metadata.push_back(Attribute::string("producer", std::string(producer)));
    }
    for (std::size_t g = 0; g < graph.groups.size(); ++g)
      result_.comm_groups[static_cast<int>(g) + 1] = graph.groups[g];
  }

  // Every task in a topological order, then each node's edge positions as
  // one attribute.
  ExportedTrace run() {
    for (TaskId t : topological_order(graph_))
      emit(t);
    for (auto& [where, list] : positions_)
      result_.ranks[static_cast<std::size_t>(where.first)].nodes[where.second].attrs.push_back(
          Attribute::int64_list(std::string(attribute::dep_edges), std::move(list)));
    return std::move(result_);
  }

 private:
  struct Face {
    int rank = 0;
    std::size_t node = 0;  // index in that rank's nodes
  };

  Node& node_at(const Face& f) { return result_.ranks[static_cast<std::size_t>(f.rank)].nodes[f.node]; }

  Face add_node(int rank, Node node) {
    auto& nodes = result_.ranks[static_cast<std::size_t>(rank)].nodes;
    node.id = nodes.size();
    nodes.push_back(std::move(node));
    return {rank, nodes.size() - 1};
  }

  static void add_common(Node& node, std::uint64_t task) {
    node.attrs.push_back(Attribute::boolean("is_cpu_op", false));
    node.attrs.push_back(Attribute::uint64(std::string(attribute::task), static_cast<std::int64_t>(task)));
  }

  void add_task_fields(Node& node, TaskId id) const {
    const Task& t = graph_[id];
    if (id < graph_.labels.size() && !graph_.labels[id].empty())
      node.attrs.push_back(Attribute::string(std::string(attribute::label), graph_.labels[id]));
    node.attrs.push_back(Attribute::string(std::string(attribute::kind), std::string(to_string(t.kind))));
    node.attrs.push_back(Attribute::string(std::string(attribute::comm), std::string(to_string(t.comm))));
    node.attrs.push_back(Attribute::int64(std::string(attribute::stage), t.stage));
    node.attrs.push_back(Attribute::int64(std::string(attribute::chunk), t.chunk));
    node.attrs.push_back(Attribute::int64(std::string(attribute::micro_batch), t.micro_batch));
    node.attrs.push_back(Attribute::int64(std::string(attribute::layer), t.layer));
    if (t.attention)
      node.attrs.push_back(Attribute::boolean(std::string(attribute::attention), true));
  }

  // The task's nodes on each of its ranks, then its dependencies.
  void emit(TaskId id) {
    const Task& t = graph_[id];
    const std::string label = workloads::task_label(graph_, id);
    switch (t.kind) {
      case TaskKind::send: {
        for (const bool send : {true, false}) {
          Node node;
          node.name = fmt::format("{} ({})", label, send ? "send" : "recv");
          node.type = send ? NodeType::send : NodeType::recv;
          add_common(node, id);
          node.attrs.push_back(Attribute::int64("comm_type", static_cast<int>(node.type)));
          node.attrs.push_back(Attribute::int64("comm_size", whole(t.bytes)));
          node.attrs.push_back(Attribute::int32("comm_src", t.gpu));
          node.attrs.push_back(Attribute::int32("comm_dst", t.peer));
          node.attrs.push_back(Attribute::int32("comm_tag", static_cast<std::int64_t>(id)));
          add_task_fields(node, id);
          node.attrs.push_back(
              Attribute::string(std::string(attribute::transfer), std::string(to_string(t.transfer))));
          node.attrs.push_back(Attribute::real_value(std::string(attribute::bytes), t.bytes));
          faces_[id].push_back(add_node(send ? t.gpu : t.peer, std::move(node)));
        }
        break;
      }
      case TaskKind::collective: {
        if (t.op == CollectiveOp::send_recv)
          throw platforms::InputError({fmt::format(
              "task {} ({}) is a send_recv ring shift, which Chakra has no collective for; expected a task "
              "graph of a training iteration",
              id, label)});
        for (int rank : graph_.groups[static_cast<std::size_t>(t.group)]) {
          Node node;
          node.name = label;
          node.type = NodeType::collective;
          add_common(node, id);
          node.attrs.push_back(Attribute::int64("comm_type", static_cast<int>(comm_type_of(t.op))));
          node.attrs.push_back(Attribute::int64("comm_size", whole(t.bytes)));
          node.attrs.push_back(Attribute::string("pg_name", std::to_string(t.group + 1)));
          add_task_fields(node, id);
          node.attrs.push_back(Attribute::string(std::string(attribute::op), std::string(to_string(t.op))));
          node.attrs.push_back(
              Attribute::string(std::string(attribute::algorithm), std::string(to_string(t.algorithm))));
          node.attrs.push_back(Attribute::int64(std::string(attribute::fold), t.fold));
          node.attrs.push_back(Attribute::real_value(std::string(attribute::bytes), t.bytes));
          faces_[id].push_back(add_node(rank, std::move(node)));
        }
        break;
      }
      default: {
        Node node;
        node.name = label;
        node.type = NodeType::compute;
        node.duration_micros =
            static_cast<std::uint64_t>(std::max<std::int64_t>(0, whole(t.duration_s * 1e6)));
        add_common(node, id);
        if (t.hardware_flops > 0)
          node.attrs.push_back(Attribute::int64("num_ops", whole(t.hardware_flops)));
        add_task_fields(node, id);
        node.attrs.push_back(Attribute::real_value(std::string(attribute::duration_s), t.duration_s));
        node.attrs.push_back(Attribute::real_value(std::string(attribute::model_flops), t.model_flops));
        node.attrs.push_back(Attribute::real_value(std::string(attribute::hardware_flops), t.hardware_flops));
        faces_[id].push_back(add_node(t.gpu, std::move(node)));
      }
    }
    // In the order added; an edge's property is its position in that order.
    for (auto [e, end] = boost::in_edges(workloads::task_vertex(id), graph_.dependencies()); e != end; ++e)
      depend(boost::source(*e, graph_.dependencies()), id, graph_.dependencies()[*e]);
  }

  void add_dep(const Face& to, const Face& from, std::int64_t position) {
    Node& node = node_at(to);
    node.data_deps.push_back(node_at(from).id);
    positions_[{to.rank, to.node}].push_back(position);
  }

  // p -> t on every rank where both have a node; else through a zero-byte
  // send / receive pair from p's first rank to t's first rank.
  void depend(TaskId p, TaskId t, std::int64_t position) {
    bool shared = false;
    // A send waits on its sender's side only (a receive's dependencies hold
    // back what follows the receive, not the transfer).
    const std::size_t to_faces = graph_[t].kind == TaskKind::send ? 1 : faces_[t].size();
    for (std::size_t k = 0; k < to_faces; ++k) {
      const Face& to = faces_[t][k];
      for (const Face& from : faces_[p])
        if (from.rank == to.rank) {
          add_dep(to, from, position);
          shared = true;
        }
    }
    if (shared)
      return;
    // A send is done when its receiver has the data: its last face.
    const Face& from = graph_[p].kind == TaskKind::send ? faces_[p].back() : faces_[p].front();
    const Face& to = faces_[t].front();
    const auto pair_id = graph_.size() + result_.dependency_pairs++;
    Face faces[2];
    for (const bool send : {true, false}) {
      Node node;
      node.name = fmt::format("dependency of task {} on task {} ({})", t, p, send ? "send" : "recv");
      node.type = send ? NodeType::send : NodeType::recv;
      add_common(node, pair_id);
      node.attrs.push_back(Attribute::int64("comm_type", static_cast<int>(node.type)));
      node.attrs.push_back(Attribute::int64("comm_size", 0));
      node.attrs.push_back(Attribute::int32("comm_src", from.rank));
      node.attrs.push_back(Attribute::int32("comm_dst", to.rank));
      node.attrs.push_back(Attribute::int32("comm_tag", static_cast<std::int64_t>(pair_id)));
      node.attrs.push_back(Attribute::boolean(std::string(attribute::dependency_only), true));
      faces[send ? 0 : 1] = add_node(send ? from.rank : to.rank, std::move(node));
    }
    add_dep(faces[0], from, position);
    // The dependent node was written before this pair: it depends on a
    // later node of its file, which Chakra's feeders resolve.
    add_dep(to, faces[1], position);
  }

  const TaskGraph& graph_;
  ExportedTrace result_;
  std::vector<std::vector<Face>> faces_;
  std::map<std::pair<int, std::size_t>, std::vector<std::int64_t>> positions_;
};

}  // namespace

ExportedTrace export_trace(const TaskGraph& graph, std::string_view producer) {
  return Exporter(graph, producer).run();
}

std::vector<fs::path> write_trace(const fs::path& dir, const std::string& name, const ExportedTrace& trace,
                                  const FileWriter& write_file) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot create: {}", dir.string(), ec.message())});
  std::vector<fs::path> written;
  for (std::size_t r = 0; r < trace.ranks.size(); ++r) {
    const fs::path path = dir / fmt::format("{}.{}.et", name, r);
    write_file(path, [&](std::ostream& out) { write_et(out, trace.ranks[r]); });
    written.push_back(path);
  }
  nlohmann::ordered_json groups = nlohmann::ordered_json::object();
  for (const auto& [id, ranks] : trace.comm_groups)
    groups[std::to_string(id)] = ranks;
  const fs::path path = dir / fmt::format("{}.comm_groups.json", name);
  write_file(path, [&](std::ostream& out) { out << groups.dump(1) << '\n'; });
  written.push_back(path);
  return written;
}

}  // namespace trainsim::chakra
