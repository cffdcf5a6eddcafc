#include "workloads/chakra/trace_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <unordered_map>

#include <boost/graph/topological_sort.hpp>
#include <nlohmann/json.hpp>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "workloads/chakra/trainsim_attributes.hpp"

namespace trainsim::chakra {
namespace {

using workloads::CollectiveOp;
using workloads::CommKind;
using workloads::Task;
using workloads::TaskKind;

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// The node as a message names it: "trace.3.et: node 17 (COMM_SEND_NODE_tb0_step2)".
std::string where(const RankTrace& rank, const Node& node) {
  return fmt::format("{}: node {} ({})", rank.file, node.id, node.name.empty() ? "unnamed" : node.name);
}

bool simulated(const Node& node) {
  switch (node.type) {
    case NodeType::compute: {
      const auto* cpu = node.attr("is_cpu_op");
      return cpu == nullptr || cpu->number().value_or(0) == 0;
    }
    case NodeType::send:
    case NodeType::recv:
    case NodeType::collective:
      return true;
    default:
      return false;
  }
}

std::optional<CollectiveOp> collective_op(CommType type) {
  switch (type) {
    case CommType::all_reduce:
      return CollectiveOp::all_reduce;
    case CommType::all_gather:
      return CollectiveOp::all_gather;
    case CommType::reduce_scatter:
    case CommType::reduce_scatter_block:
      return CollectiveOp::reduce_scatter;
    case CommType::broadcast:
      return CollectiveOp::broadcast;
    case CommType::all_to_all:
      return CollectiveOp::all_to_all;
    case CommType::barrier:  // a zero-byte all-reduce: every rank waits for all
      return CollectiveOp::all_reduce;
    default:
      return std::nullopt;
  }
}

// A display name for timelines and CSV files (no separators).
std::string label_of(const std::string& name) {
  std::string label = name;
  for (char& c : label)
    if (c == ',' || c == '"' || c == '\n' || c == '\r')
      c = ';';
  return label;
}

// One task of the graph being built, and the nodes that stand for it.
struct Pending {
  Task task;
  std::string label;
  std::vector<std::pair<int, std::size_t>> nodes;  // (rank, node index)
  std::uint64_t order = 0;                         // trainsim.task, when every node has one
  bool dependency_only = false;
  // Collectives: the ranks of the group, the op and size all members agree on.
  std::vector<int> group;
  int comm_type = -1;
  double size_bytes = 0;
};

class Importer {
 public:
  Importer(const std::vector<RankTrace>& ranks, const ImportOptions& options)
      : ranks_(ranks), options_(options), task_of_(ranks.size()), index_of_(ranks.size()) {}

  ImportedTrace run() {
    index_nodes();
    errors_.throw_if_any();
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      deps_.emplace_back();
      for (std::size_t i = 0; i < ranks_[r].trace.nodes.size(); ++i)
        deps_.back().push_back(read_deps(r, i));
    }
    errors_.throw_if_any();
    assign_tasks();
    errors_.throw_if_any();
    check_partners();
    errors_.throw_if_any();
    collect_edges();
    errors_.throw_if_any();
    return build();
  }

 private:
  bool extensions(const Node& node) const {
    return options_.trainsim_attributes && node.attr(attribute::task) != nullptr;
  }

  void index_nodes() {
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const auto& nodes = ranks_[r].trace.nodes;
      task_of_[r].assign(nodes.size(), kNone);
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        ++stats_.nodes;
        if (!index_of_[r].emplace(nodes[i].id, i).second)
          errors_.add(
              fmt::format("{}: the id is used by an earlier node too; expected unique node ids in a "
                          "rank's file",
                          where(ranks_[r], nodes[i])));
      }
    }
  }

  std::vector<int> group_of(const RankTrace& rank, const Node& node) {
    const std::string pg = node.text("pg_name").value_or("");
    if (pg.empty() || pg == "0") {
      std::vector<int> all(ranks_.size());
      for (std::size_t i = 0; i < all.size(); ++i)
        all[i] = static_cast<int>(i);
      return all;
    }
    const auto it = options_.comm_groups.find(pg);
    if (it == options_.comm_groups.end()) {
      errors_.add(fmt::format(
          "{}: pg_name '{}' is not a known communicator group ({}); expected one of the comm groups file "
          "(workload.comm_groups: ASTRA-sim's {{\"<id>\": [ranks...]}}), or an empty pg_name for every rank",
          where(rank, node), pg,
          options_.comm_groups.empty() ? "no comm groups file was given"
                                       : fmt::format("{} groups given", options_.comm_groups.size())));
      return {};
    }
    return it->second;
  }

  // Each simulated node joins a task: its own (compute), or the one its
  // partners on other ranks join (collectives by group and issue order,
  // sends and receives by source, destination, tag and order).
  void assign_tasks() {
    std::map<std::tuple<std::vector<int>, std::size_t>, std::size_t> collective_task;
    std::map<std::tuple<int, int, long long, std::size_t>, std::size_t> p2p_task;
    std::vector<std::map<std::vector<int>, std::size_t>> collectives_seen(ranks_.size());
    std::map<std::tuple<int, int, long long>, std::size_t> sends_seen, recvs_seen;
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      const auto& rank = ranks_[r];
      const int me = static_cast<int>(r);
      for (std::size_t i = 0; i < rank.trace.nodes.size(); ++i) {
        const Node& node = rank.trace.nodes[i];
        if (!simulated(node)) {
          ++stats_.skipped;
          continue;
        }
        std::size_t task = kNone;
        switch (node.type) {
          case NodeType::compute:
            ++stats_.compute;
            task = new_task();
            fill_compute(rank, node, me, tasks_[task]);
            break;
          case NodeType::collective: {
            ++stats_.collectives;
            auto group = group_of(rank, node);
            if (group.empty())
              continue;
            if (std::find(group.begin(), group.end(), me) == group.end()) {
              errors_.add(
                  fmt::format("{}: a collective of a group without this rank ({}); expected the "
                              "group of a rank's collective to include it",
                              where(rank, node), fmt::join(group, ", ")));
              continue;
            }
            const std::size_t k = collectives_seen[r][group]++;
            auto [it, fresh] = collective_task.try_emplace({group, k}, kNone);
            if (fresh) {
              it->second = new_task();
              fill_collective(rank, node, std::move(group), tasks_[it->second]);
            } else {
              check_collective(rank, node, tasks_[it->second]);
            }
            task = it->second;
            break;
          }
          case NodeType::send:
          case NodeType::recv: {
            const bool send = node.type == NodeType::send;
            (send ? stats_.sends : stats_.recvs)++;
            const auto peer = node.number(send ? "comm_dst" : "comm_src");
            if (!peer || *peer < 0 || *peer >= static_cast<double>(ranks_.size())) {
              errors_.add(fmt::format("{}: {} is {}; expected the rank of the {} (0 to {})",
                                      where(rank, node), send ? "comm_dst" : "comm_src",
                                      peer ? fmt::format("{}", *peer) : std::string("missing"),
                                      send ? "receiver" : "sender", ranks_.size() - 1));
              continue;
            }
            const int src = send ? me : static_cast<int>(*peer);
            const int dst = send ? static_cast<int>(*peer) : me;
            const auto tag = static_cast<long long>(node.number("comm_tag").value_or(0));
            auto& seen = send ? sends_seen : recvs_seen;
            const std::size_t k = seen[{src, dst, tag}]++;
            auto [it, fresh] = p2p_task.try_emplace({src, dst, tag, k}, kNone);
            if (fresh) {
              it->second = new_task();
              tasks_[it->second].task.kind = TaskKind::send;
              tasks_[it->second].task.comm = CommKind::pp;
              tasks_[it->second].task.gpu = src;
              tasks_[it->second].task.peer = dst;
              tasks_[it->second].task.stage = 0;
              tasks_[it->second].size_bytes = -1;
            }
            task = it->second;
            fill_p2p(rank, node, send, tasks_[task]);
            break;
          }
          default:
            break;
        }
        if (task == kNone)
          continue;
        task_of_[r][i] = task;
        tasks_[task].nodes.emplace_back(me, i);
      }
    }
  }

  std::size_t new_task() {
    tasks_.emplace_back();
    return tasks_.size() - 1;
  }

  void fill_compute(const RankTrace& rank, const Node& node, int gpu, Pending& p) {
    Task& t = p.task;
    t.kind = TaskKind::compute;
    t.gpu = gpu;
    t.stage = 0;
    p.label = label_of(node.name);
    const double flops = node.number("num_ops").value_or(0);
    t.model_flops = t.hardware_flops = flops;
    if (node.duration_micros > 0) {
      t.duration_s = static_cast<double>(node.duration_micros) * 1e-6;
    } else if (flops > 0 || node.number("tensor_size").value_or(0) > 0) {
      const auto g = static_cast<std::size_t>(gpu);
      if (g >= options_.rates.size() || options_.rates[g].flops_per_s <= 0) {
        errors_.add(
            fmt::format("{}: gives num_ops / tensor_size but no duration_micros, and no GPU speed is "
                        "known for rank {}",
                        where(rank, node), gpu));
        return;
      }
      const auto& rate = options_.rates[g];
      const double bytes = node.number("tensor_size").value_or(0);
      t.duration_s =
          std::max(flops / rate.flops_per_s, rate.bytes_per_s > 0 ? bytes / rate.bytes_per_s : 0.0);
    }
    if (extensions(node))
      restore(rank, node, p);
  }

  void fill_collective(const RankTrace& rank, const Node& node, std::vector<int> group, Pending& p) {
    Task& t = p.task;
    t.kind = TaskKind::collective;
    t.comm = CommKind::dp;
    t.stage = 0;
    p.group = std::move(group);
    p.label = label_of(node.name);
    const auto type = node.number("comm_type");
    p.comm_type = type ? static_cast<int>(*type) : -1;
    const auto op =
        type && *type >= 0 && *type <= 9 ? collective_op(static_cast<CommType>(*type)) : std::nullopt;
    if (!op) {
      errors_.add(
          fmt::format("{}: comm_type {} is not a collective trainsim simulates; expected ALL_REDUCE (0), "
                      "ALL_GATHER (2), BROADCAST (5), ALL_TO_ALL (6), REDUCE_SCATTER (7, 8) or "
                      "BARRIER (9)",
                      where(rank, node),
                      type ? fmt::format("{} ({})", *type,
                                         *type >= 0 && *type <= 9 ? to_string(static_cast<CommType>(*type))
                                                                  : std::string_view("unknown"))
                           : std::string("missing")));
      return;
    }
    t.op = *op;
    p.size_bytes =
        p.comm_type == static_cast<int>(CommType::barrier) ? 0 : node.number("comm_size").value_or(0);
    t.bytes = p.size_bytes;
    if (extensions(node))
      restore(rank, node, p);
  }

  void check_collective(const RankTrace& rank, const Node& node, const Pending& p) {
    const auto type = node.number("comm_type");
    const double size =
        p.comm_type == static_cast<int>(CommType::barrier) ? 0 : node.number("comm_size").value_or(0);
    if (!type || static_cast<int>(*type) != p.comm_type || size != p.size_bytes) {
      const auto& [first_rank, first_index] = p.nodes.front();
      errors_.add(fmt::format(
          "{}: matches, by its place among its group's collectives, the collective on rank {} ({}) of "
          "comm_type "
          "{} and {} bytes, but is comm_type {} of {} bytes; expected the ranks of a group to issue the same "
          "collectives in the same order",
          where(rank, node), first_rank,
          where(ranks_[static_cast<std::size_t>(first_rank)],
                ranks_[static_cast<std::size_t>(first_rank)].trace.nodes[first_index]),
          p.comm_type, p.size_bytes, type ? static_cast<int>(*type) : -1, size));
    }
  }

  void fill_p2p(const RankTrace& rank, const Node& node, bool send, Pending& p) {
    const double size = node.number("comm_size").value_or(node.number("tensor_size").value_or(0));
    if (p.size_bytes < 0) {
      p.size_bytes = size;
      p.task.bytes = size;
      p.label = label_of(node.name);
    } else if (size != p.size_bytes) {
      errors_.add(
          fmt::format("{}: {} {} bytes, but its partner says {}; expected a send and its receive to agree",
                      where(rank, node), send ? "sends" : "receives", size, p.size_bytes));
    }
    if (send)
      p.label = label_of(node.name);
    if (extensions(node)) {
      restore(rank, node, p);
      p.dependency_only = node.number(attribute::dependency_only).value_or(0) != 0;
    }
  }

  // trainsim's own attributes: every task field, exactly.
  void restore(const RankTrace& rank, const Node& node, Pending& p) {
    Task& t = p.task;
    p.label = node.text(attribute::label).value_or("");
    p.order = static_cast<std::uint64_t>(node.number(attribute::task).value_or(0));
    const auto text_enum = [&](std::string_view name, auto& field, int count) {
      using E = std::remove_reference_t<decltype(field)>;
      if (const auto text = node.text(name)) {
        if (auto value = enum_from_string<E>(*text, count))
          field = *value;
        else
          errors_.add(fmt::format("{}: {} '{}' is not one trainsim knows", where(rank, node), name, *text));
      }
    };
    text_enum(attribute::kind, t.kind, 8);
    text_enum(attribute::comm, t.comm, 6);
    text_enum(attribute::op, t.op, 6);
    text_enum(attribute::transfer, t.transfer, 5);
    text_enum(attribute::algorithm, t.algorithm, 7);
    const auto integer = [&](std::string_view name, int& field) {
      if (const auto v = node.number(name))
        field = static_cast<int>(*v);
    };
    // Chunks and layers are 16-bit in a task (kMaxTaskLayers).
    const auto small_integer = [&](std::string_view name, std::int16_t& field, int least) {
      if (const auto v = node.number(name)) {
        if (*v < least || *v > workloads::kMaxTaskLayers)
          errors_.add(fmt::format("{}: {} {} is outside {}..{}", where(rank, node), name, *v, least,
                                  workloads::kMaxTaskLayers));
        else
          field = static_cast<std::int16_t>(*v);
      }
    };
    integer(attribute::stage, t.stage);
    small_integer(attribute::chunk, t.chunk, 0);
    integer(attribute::micro_batch, t.micro_batch);
    small_integer(attribute::layer, t.layer, -1);
    integer(attribute::fold, t.fold);
    t.attention = node.number(attribute::attention).value_or(0) != 0;
    const auto real = [&](std::string_view name, double& field) {
      if (const auto v = node.number(name))
        field = *v;
    };
    real(attribute::duration_s, t.duration_s);
    real(attribute::model_flops, t.model_flops);
    real(attribute::hardware_flops, t.hardware_flops);
    real(attribute::bytes, t.bytes);
  }

  void check_partners() {
    for (const auto& p : tasks_) {
      if (p.task.kind == TaskKind::collective && !p.group.empty()) {
        std::set<int> have;
        for (const auto& [r, i] : p.nodes)
          have.insert(r);
        for (int member : p.group)
          if (have.count(member) == 0) {
            const auto& [r, i] = p.nodes.front();
            errors_.add(fmt::format(
                "{}: collective of the group {{{}}} has no counterpart on rank {} ({} has fewer collectives "
                "of this group); expected every rank of a group to issue each of its collectives",
                where(ranks_[static_cast<std::size_t>(r)],
                      ranks_[static_cast<std::size_t>(r)].trace.nodes[i]),
                fmt::join(p.group, ", "), member, ranks_[static_cast<std::size_t>(member)].file));
            break;
          }
      } else if (p.task.kind == TaskKind::send && p.nodes.size() != 2) {
        const auto& [r, i] = p.nodes.front();
        const auto& node = ranks_[static_cast<std::size_t>(r)].trace.nodes[i];
        errors_.add(
            fmt::format("{}: has no matching {} on rank {} (same tag, same order); expected every send "
                        "to be received",
                        where(ranks_[static_cast<std::size_t>(r)], node),
                        node.type == NodeType::send ? "COMM_RECV_NODE" : "COMM_SEND_NODE",
                        node.type == NodeType::send ? p.task.peer : p.task.gpu));
      }
    }
  }

  // The simulated tasks a node stands for when another depends on it: its
  // own, or those of the nodes it depends on when it is not simulated.
  const std::vector<std::size_t>& resolved(std::size_t r, std::size_t i) {
    auto& memo = resolved_[{r, i}];
    if (memo.done)
      return memo.tasks;
    if (memo.visiting) {
      errors_.add(
          fmt::format("{}: its dependencies form a cycle", where(ranks_[r], ranks_[r].trace.nodes[i])));
      return memo.tasks;
    }
    memo.visiting = true;
    std::vector<std::size_t> tasks;
    const bool receive = ranks_[r].trace.nodes[i].type == NodeType::recv;
    if (task_of_[r][i] != kNone)
      tasks.push_back(task_of_[r][i]);
    // A receive completes when the data is there and its own dependencies
    // are met: those hold back what follows it, not the transfer.
    if (task_of_[r][i] == kNone || receive) {
      for (const auto& [dep, edge] : deps_[r][i])
        for (std::size_t t : resolved(r, dep))
          if (std::find(tasks.begin(), tasks.end(), t) == tasks.end())
            tasks.push_back(t);
    }
    // std::map keeps `memo` valid while the recursion adds entries.
    memo.tasks = std::move(tasks);
    memo.done = true;
    memo.visiting = false;
    return memo.tasks;
  }

  // A node's dependencies (data, then control), as node indices of its rank,
  // each with trainsim's edge position when the trace carries it.
  std::vector<std::pair<std::size_t, long long>> read_deps(std::size_t r, std::size_t i) {
    const auto& rank = ranks_[r];
    const Node& node = rank.trace.nodes[i];
    std::vector<std::int64_t> positions;
    if (const auto* a = node.attr(attribute::dep_edges); a && options_.trainsim_attributes)
      positions = a->integers;
    std::vector<std::pair<std::size_t, long long>> deps;
    std::size_t k = 0;
    for (const auto* list : {&node.data_deps, &node.ctrl_deps})
      for (std::uint64_t id : *list) {
        const long long position = k < positions.size() ? static_cast<long long>(positions[k]) : -1;
        ++k;
        const auto it = index_of_[r].find(id);
        if (it == index_of_[r].end()) {
          errors_.add(fmt::format("{}: depends on node {}, which {} does not have", where(rank, node), id,
                                  rank.file));
          continue;
        }
        deps.emplace_back(it->second, position);
      }
    return deps;
  }

  // One edge per (predecessor, task, trainsim edge position): the same
  // edge seen from several ranks of a collective counts once, while
  // trainsim's parallel edges (distinct positions) stay, so the replay
  // releases successors in the same order.
  void collect_edges() {
    std::set<std::tuple<std::size_t, std::size_t, long long>> seen;
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      for (std::size_t i = 0; i < ranks_[r].trace.nodes.size(); ++i) {
        const std::size_t to = task_of_[r][i];
        // A transfer starts when the sender's dependencies are met (eager,
        // as ASTRA-sim sends); a receive's own wait for its successors.
        if (to == kNone || ranks_[r].trace.nodes[i].type == NodeType::recv)
          continue;
        for (const auto& [dep, position] : deps_[r][i])
          for (std::size_t from : resolved(r, dep))
            if (from != to && seen.insert({from, to, position}).second)
              edges_.push_back({from, to, position, edges_.size()});
      }
  }

  ImportedTrace build() {
    // Dependency-only sends become plain edges: each of their predecessors
    // to each of their successors.
    std::vector<std::vector<std::size_t>> preds(tasks_.size()), succs(tasks_.size());
    for (std::size_t e = 0; e < edges_.size(); ++e) {
      preds[edges_[e].to].push_back(e);
      succs[edges_[e].from].push_back(e);
    }
    std::vector<Edge> edges;
    for (const auto& e : edges_) {
      if (tasks_[e.from].dependency_only || tasks_[e.to].dependency_only)
        continue;
      edges.push_back(e);
    }
    for (std::size_t t = 0; t < tasks_.size(); ++t) {
      if (!tasks_[t].dependency_only)
        continue;
      for (std::size_t in : preds[t])
        for (std::size_t out : succs[t]) {
          if (tasks_[edges_[in].from].dependency_only || tasks_[edges_[out].to].dependency_only)
            continue;  // chains of such pairs are not written
          edges.push_back({edges_[in].from, edges_[out].to, edges_[out].position, edges_[out].sequence});
        }
    }

    // Task ids: trainsim's own when the trace carries them, else the order of
    // first appearance (rank by rank, in file order).
    std::vector<std::size_t> order;
    for (std::size_t t = 0; t < tasks_.size(); ++t)
      if (!tasks_[t].dependency_only)
        order.push_back(t);
    const bool numbered = std::all_of(order.begin(), order.end(), [&](std::size_t t) {
      const auto& [r, i] = tasks_[t].nodes.front();
      return extensions(ranks_[static_cast<std::size_t>(r)].trace.nodes[i]);
    });
    if (numbered)
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t a, std::size_t b) { return tasks_[a].order < tasks_[b].order; });
    std::vector<std::size_t> id_of(tasks_.size(), kNone);
    for (std::size_t k = 0; k < order.size(); ++k)
      id_of[order[k]] = k;

    ImportedTrace result;
    auto& graph = result.graph;
    graph.gpu_count = static_cast<int>(ranks_.size());
    std::map<std::vector<int>, int> group_index;
    bool any_label = false;
    for (std::size_t t : order) {
      Task task = tasks_[t].task;
      if (task.kind == TaskKind::collective) {
        auto [it, fresh] = group_index.try_emplace(tasks_[t].group, 0);
        if (fresh)
          it->second = graph.add_group(tasks_[t].group);
        task.group = it->second;
      }
      graph.add(task);
      graph.labels.push_back(tasks_[t].label);
      any_label = any_label || !tasks_[t].label.empty();
    }
    if (!any_label)
      graph.labels.clear();
    // Edges in trainsim's order when known, else in the order found.
    std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
      const bool ka = a.position >= 0, kb = b.position >= 0;
      if (ka != kb)
        return ka;
      return ka ? a.position < b.position : a.sequence < b.sequence;
    });
    std::set<std::tuple<std::size_t, std::size_t, long long>> added;
    for (const auto& e : edges)
      if (added.insert({id_of[e.from], id_of[e.to], e.position}).second)
        graph.depend(id_of[e.from], id_of[e.to]);
    graph.resident_memory.assign(ranks_.size(), workloads::MemoryBreakdown{});
    graph.seal();

    try {
      std::vector<workloads::TaskId> sorted;
      boost::topological_sort(graph.dependencies(), std::back_inserter(sorted));
    } catch (const boost::not_a_dag&) {
      throw platforms::InputError({fmt::format(
          "{} and the other ranks: the dependencies, with the collectives and send / receive pairs that join "
          "the ranks, form a cycle, so the trace can never finish; expected an acyclic trace",
          ranks_.front().file)});
    }
    result.stats = stats_;
    return result;
  }

  struct Edge {
    std::size_t from = 0;
    std::size_t to = 0;
    long long position = -1;   // trainsim's edge position, -1: unknown
    std::size_t sequence = 0;  // order found
  };
  struct Memo {
    std::vector<std::size_t> tasks;
    bool done = false;
    bool visiting = false;
  };

  const std::vector<RankTrace>& ranks_;
  const ImportOptions& options_;
  platforms::ErrorList errors_;
  ImportStats stats_;
  std::vector<Pending> tasks_;
  std::vector<std::vector<std::size_t>> task_of_;  // per rank, per node: its task or kNone
  std::vector<std::unordered_map<std::uint64_t, std::size_t>> index_of_;  // per rank: node id -> index
  std::map<std::pair<std::size_t, std::size_t>, Memo> resolved_;
  // Per rank, per node: its dependencies (node index, trainsim edge position).
  std::vector<std::vector<std::vector<std::pair<std::size_t, long long>>>> deps_;
  std::vector<Edge> edges_;
};

}  // namespace

ImportedTrace import_trace(const std::vector<RankTrace>& ranks, const ImportOptions& options) {
  if (ranks.empty())
    throw platforms::InputError({"a Chakra trace needs at least one rank's file"});
  return Importer(ranks, options).run();
}

std::map<std::string, std::vector<int>> read_comm_groups(const std::string& path) {
  const std::string text =
      platforms::read_input_file(path, "comm groups file", platforms::kMaxTableInputBytes);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw platforms::InputError({fmt::format("{}: not valid JSON: {}", path, e.what())});
  }
  std::map<std::string, std::vector<int>> groups;
  const auto expected = "expected ASTRA-sim's communicator groups: {\"<id>\": [rank, ...], ...}";
  if (!j.is_object())
    throw platforms::InputError({fmt::format("{}: not a JSON object; {}", path, expected)});
  for (const auto& [id, ranks] : j.items()) {
    if (!ranks.is_array() || ranks.empty())
      throw platforms::InputError(
          {fmt::format("{}: group \"{}\" is not a list of ranks; {}", path, id, expected)});
    std::vector<int> list;
    for (const auto& r : ranks) {
      if (!r.is_number_integer() || r.get<long long>() < 0 || r.get<long long>() > (1 << 30))
        throw platforms::InputError(
            {fmt::format("{}: group \"{}\" holds {}, not a rank; {}", path, id, r.dump(), expected)});
      list.push_back(r.get<int>());
    }
    groups[id] = std::move(list);
  }
  return groups;
}

}  // namespace trainsim::chakra
