#pragma once
// One rank's Chakra execution trace (ET) in plain C++ types, as read from or
// written to a `.et` file (workloads/chakra/et_file.hpp). Protobuf stays
// inside this library: callers see nodes, their dependencies and their
// attributes, never the generated message classes.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::chakra {

// Chakra's NodeType, same numbers as the schema.
enum class NodeType : int {
  invalid = 0,
  metadata = 1,
  mem_load = 2,
  mem_store = 3,
  compute = 4,
  send = 5,
  recv = 6,
  collective = 7,
};
std::string_view to_string(NodeType type);

// Chakra's CollectiveCommType, same numbers as the schema.
enum class CommType : int {
  all_reduce = 0,
  reduce = 1,
  all_gather = 2,
  gather = 3,
  scatter = 4,
  broadcast = 5,
  all_to_all = 6,
  reduce_scatter = 7,
  reduce_scatter_block = 8,
  barrier = 9,
};
std::string_view to_string(CommType type);

// A node attribute (Chakra's AttributeProto). The protobuf value types fold
// into a few kinds; `kind` also says which one a writer emits, since readers
// of Chakra files (ASTRA-sim's feeder) expect each known attribute in one
// type: comm_type, comm_size, num_ops as int64, comm_src / dst / tag as
// int32, tensor_size as uint64, is_cpu_op as bool, pg_name as string.
struct Attribute {
  enum class Kind {
    int32,
    int64,
    uint64,
    real,
    boolean,
    text,
    int64_list,
    real_list,
    bool_list,
    text_list,
    other
  };
  std::string name;
  Kind kind = Kind::other;
  std::int64_t integer = 0;  // int32, int64, uint64 (below 2^63)
  double real = 0;
  bool flag = false;
  std::string text;
  std::vector<std::int64_t> integers;
  std::vector<double> reals;
  std::vector<bool> flags;
  std::vector<std::string> texts;

  static Attribute int32(std::string name, std::int64_t value);
  static Attribute int64(std::string name, std::int64_t value);
  static Attribute uint64(std::string name, std::int64_t value);
  static Attribute real_value(std::string name, double value);
  static Attribute boolean(std::string name, bool value);
  static Attribute string(std::string name, std::string value);
  static Attribute int64_list(std::string name, std::vector<std::int64_t> values);

  // The value as a number, for every integer and floating-point kind (and a
  // bool as 0 / 1); nullopt for text and lists.
  std::optional<double> number() const;
};

struct Node {
  std::uint64_t id = 0;
  std::string name;
  NodeType type = NodeType::invalid;
  std::vector<std::uint64_t> ctrl_deps;
  std::vector<std::uint64_t> data_deps;
  std::uint64_t start_time_micros = 0;
  std::uint64_t duration_micros = 0;
  std::vector<Attribute> attrs;

  const Attribute* attr(std::string_view name) const;
  std::optional<double> number(std::string_view name) const;
  std::optional<std::string> text(std::string_view name) const;
};

struct Trace {
  std::string version;  // GlobalMetadata.version
  std::vector<Attribute> metadata;
  std::vector<Node> nodes;  // in file order
};

}  // namespace trainsim::chakra
