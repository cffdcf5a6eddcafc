#include "workloads/chakra/et_trace.hpp"

namespace trainsim::chakra {

std::string_view to_string(NodeType type) {
  switch (type) {
    case NodeType::invalid:
      return "INVALID_NODE";
    case NodeType::metadata:
      return "METADATA_NODE";
    case NodeType::mem_load:
      return "MEM_LOAD_NODE";
    case NodeType::mem_store:
      return "MEM_STORE_NODE";
    case NodeType::compute:
      return "COMP_NODE";
    case NodeType::send:
      return "COMM_SEND_NODE";
    case NodeType::recv:
      return "COMM_RECV_NODE";
    case NodeType::collective:
      return "COMM_COLL_NODE";
  }
  return "?";
}

std::string_view to_string(CommType type) {
  switch (type) {
    case CommType::all_reduce:
      return "ALL_REDUCE";
    case CommType::reduce:
      return "REDUCE";
    case CommType::all_gather:
      return "ALL_GATHER";
    case CommType::gather:
      return "GATHER";
    case CommType::scatter:
      return "SCATTER";
    case CommType::broadcast:
      return "BROADCAST";
    case CommType::all_to_all:
      return "ALL_TO_ALL";
    case CommType::reduce_scatter:
      return "REDUCE_SCATTER";
    case CommType::reduce_scatter_block:
      return "REDUCE_SCATTER_BLOCK";
    case CommType::barrier:
      return "BARRIER";
  }
  return "?";
}

namespace {
Attribute make(std::string name, Attribute::Kind kind) {
  Attribute a;
  a.name = std::move(name);
  a.kind = kind;
  return a;
}
}  // namespace

Attribute Attribute::int32(std::string name, std::int64_t value) {
  auto a = make(std::move(name), Kind::int32);
  a.integer = value;
  return a;
}
Attribute Attribute::int64(std::string name, std::int64_t value) {
  auto a = make(std::move(name), Kind::int64);
  a.integer = value;
  return a;
}
Attribute Attribute::uint64(std::string name, std::int64_t value) {
  auto a = make(std::move(name), Kind::uint64);
  a.integer = value;
  return a;
}
Attribute Attribute::real_value(std::string name, double value) {
  auto a = make(std::move(name), Kind::real);
  a.real = value;
  return a;
}
Attribute Attribute::boolean(std::string name, bool value) {
  auto a = make(std::move(name), Kind::boolean);
  a.flag = value;
  return a;
}
Attribute Attribute::string(std::string name, std::string value) {
  auto a = make(std::move(name), Kind::text);
  a.text = std::move(value);
  return a;
}
Attribute Attribute::int64_list(std::string name, std::vector<std::int64_t> values) {
  auto a = make(std::move(name), Kind::int64_list);
  a.integers = std::move(values);
  return a;
}

std::optional<double> Attribute::number() const {
  switch (kind) {
    case Kind::int32:
    case Kind::int64:
    case Kind::uint64:
      return static_cast<double>(integer);
    case Kind::real:
      return real;
    case Kind::boolean:
      return flag ? 1.0 : 0.0;
    default:
      return std::nullopt;
  }
}

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const auto& a : attrs)
    if (a.name == attr_name)
      return &a;
  return nullptr;
}

std::optional<double> Node::number(std::string_view attr_name) const {
  const auto* a = attr(attr_name);
  return a ? a->number() : std::nullopt;
}

std::optional<std::string> Node::text(std::string_view attr_name) const {
  const auto* a = attr(attr_name);
  if (a == nullptr || a->kind != Attribute::Kind::text)
    return std::nullopt;
  return a->text;
}

}  // namespace trainsim::chakra
