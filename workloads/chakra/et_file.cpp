#include "workloads/chakra/et_file.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <regex>

#include "platforms/directory_walk.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "workloads/chakra/chakra_et.pb.h"

namespace trainsim::chakra {
namespace fs = std::filesystem;
namespace pb = ChakraProtoMsg;
namespace io = google::protobuf::io;
namespace {

Attribute from_proto(const pb::AttributeProto& p) {
  Attribute a;
  a.name = p.name();
  using A = pb::AttributeProto;
  using K = Attribute::Kind;
  switch (p.value_case()) {
    case A::kInt32Val:
      a = Attribute::int32(p.name(), p.int32_val());
      break;
    case A::kSint32Val:
      a = Attribute::int32(p.name(), p.sint32_val());
      break;
    case A::kSfixed32Val:
      a = Attribute::int32(p.name(), p.sfixed32_val());
      break;
    case A::kInt64Val:
      a = Attribute::int64(p.name(), p.int64_val());
      break;
    case A::kSint64Val:
      a = Attribute::int64(p.name(), p.sint64_val());
      break;
    case A::kSfixed64Val:
      a = Attribute::int64(p.name(), p.sfixed64_val());
      break;
    case A::kUint32Val:
      a = Attribute::uint64(p.name(), p.uint32_val());
      break;
    case A::kFixed32Val:
      a = Attribute::uint64(p.name(), p.fixed32_val());
      break;
    case A::kUint64Val:
      a = Attribute::uint64(p.name(), static_cast<std::int64_t>(p.uint64_val()));
      break;
    case A::kFixed64Val:
      a = Attribute::uint64(p.name(), static_cast<std::int64_t>(p.fixed64_val()));
      break;
    case A::kDoubleVal:
      a = Attribute::real_value(p.name(), p.double_val());
      break;
    case A::kFloatVal:
      a = Attribute::real_value(p.name(), p.float_val());
      break;
    case A::kBoolVal:
      a = Attribute::boolean(p.name(), p.bool_val());
      break;
    case A::kStringVal:
      a = Attribute::string(p.name(), p.string_val());
      break;
    case A::kInt64List:
      a.kind = K::int64_list;
      a.integers.assign(p.int64_list().values().begin(), p.int64_list().values().end());
      break;
    case A::kInt32List:
      a.kind = K::int64_list;
      a.integers.assign(p.int32_list().values().begin(), p.int32_list().values().end());
      break;
    case A::kUint64List:
      a.kind = K::int64_list;
      for (auto v : p.uint64_list().values())
        a.integers.push_back(static_cast<std::int64_t>(v));
      break;
    case A::kUint32List:
      a.kind = K::int64_list;
      a.integers.assign(p.uint32_list().values().begin(), p.uint32_list().values().end());
      break;
    case A::kDoubleList:
      a.kind = K::real_list;
      a.reals.assign(p.double_list().values().begin(), p.double_list().values().end());
      break;
    case A::kFloatList:
      a.kind = K::real_list;
      a.reals.assign(p.float_list().values().begin(), p.float_list().values().end());
      break;
    case A::kBoolList:
      a.kind = K::bool_list;
      a.flags.assign(p.bool_list().values().begin(), p.bool_list().values().end());
      break;
    case A::kStringList:
      a.kind = K::text_list;
      a.texts.assign(p.string_list().values().begin(), p.string_list().values().end());
      break;
    default:
      a.kind = K::other;  // bytes, the other list types: kept by name only
      break;
  }
  return a;
}

void to_proto(const Attribute& a, pb::AttributeProto& p) {
  p.set_name(a.name);
  using K = Attribute::Kind;
  switch (a.kind) {
    case K::int32:
      p.set_int32_val(static_cast<std::int32_t>(a.integer));
      break;
    case K::int64:
      p.set_int64_val(a.integer);
      break;
    case K::uint64:
      p.set_uint64_val(static_cast<std::uint64_t>(a.integer));
      break;
    case K::real:
      p.set_double_val(a.real);
      break;
    case K::boolean:
      p.set_bool_val(a.flag);
      break;
    case K::text:
      p.set_string_val(a.text);
      break;
    case K::int64_list:
      for (auto v : a.integers)
        p.mutable_int64_list()->add_values(v);
      break;
    case K::real_list:
      for (auto v : a.reals)
        p.mutable_double_list()->add_values(v);
      break;
    case K::bool_list:
      for (bool v : a.flags)
        p.mutable_bool_list()->add_values(v);
      break;
    case K::text_list:
      for (const auto& v : a.texts)
        p.mutable_string_list()->add_values(v);
      break;
    case K::other:
      break;
  }
}

// Reads the next length-delimited message; false at the end of the file.
// A fresh CodedInputStream per message keeps protobuf's total-bytes limit
// per message, so traces of any length read.
template <class Message>
bool read_delimited(io::ZeroCopyInputStream& stream, Message& message, const fs::path& path,
                    std::size_t index) {
  io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(static_cast<int>(platforms::kMaxBinaryInputBytes));
  std::uint32_t size = 0;
  if (!coded.ReadVarint32(&size))
    return false;
  const auto limit = coded.PushLimit(static_cast<int>(size));
  if (!message.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    throw platforms::InputError({fmt::format(
        "{}: message {} ({} bytes) is not a Chakra {}: expected a Chakra execution trace (a length-prefixed "
        "GlobalMetadata message, then Node messages)",
        path.string(), index, size, index == 0 ? "GlobalMetadata" : "Node")});
  coded.PopLimit(limit);
  return true;
}

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

}  // namespace

Trace read_et_file(const fs::path& path) {
  // The reader of every input (a regular file, at most the binary cap); a
  // gzip file's content is held to the same cap, and so is the number of
  // nodes (an empty Node message is one byte: a 1 GiB file of zeros would
  // otherwise become a billion nodes).
  const std::string bytes =
      platforms::read_binary_input_file(path.string(), "Chakra trace file", platforms::kMaxBinaryInputBytes);
  const bool gzip = is_gzip(bytes);
  io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  std::optional<io::GzipInputStream> unzipped;
  if (gzip)
    unzipped.emplace(&raw, io::GzipInputStream::GZIP);
  io::ZeroCopyInputStream& stream = gzip ? static_cast<io::ZeroCopyInputStream&>(*unzipped) : raw;

  Trace trace;
  pb::GlobalMetadata metadata;
  if (!read_delimited(stream, metadata, path, 0))
    throw platforms::InputError(
        {fmt::format("{}: empty: expected a Chakra execution trace (a GlobalMetadata message, then Node "
                     "messages)",
                     path.string())});
  trace.version = metadata.version();
  for (const auto& a : metadata.attr())
    trace.metadata.push_back(from_proto(a));
  pb::Node message;
  for (std::size_t index = 1; read_delimited(stream, message, path, index); ++index) {
    if (gzip && static_cast<std::size_t>(unzipped->ByteCount()) > platforms::kMaxBinaryInputBytes)
      throw platforms::InputError({fmt::format(
          "{}: decompresses to more than {} MiB, more than trainsim reads for a Chakra trace file",
          path.string(), platforms::kMaxBinaryInputBytes >> 20)});
    if (index > kMaxTraceNodes)
      throw platforms::InputError(
          {fmt::format("{}: holds more than {} nodes, more than trainsim replays from one rank's trace",
                       path.string(), kMaxTraceNodes)});
    Node node;
    node.id = message.id();
    node.name = message.name();
    node.type = static_cast<NodeType>(message.type());
    node.ctrl_deps.assign(message.ctrl_deps().begin(), message.ctrl_deps().end());
    node.data_deps.assign(message.data_deps().begin(), message.data_deps().end());
    node.start_time_micros = message.start_time_micros();
    node.duration_micros = message.duration_micros();
    for (const auto& a : message.attr())
      node.attrs.push_back(from_proto(a));
    trace.nodes.push_back(std::move(node));
    message.Clear();
  }
  return trace;
}

void write_et(std::ostream& out, const Trace& trace) {
  {
    io::OstreamOutputStream raw(&out);
    const auto write = [&raw](const google::protobuf::Message& message) {
      io::CodedOutputStream coded(&raw);
      coded.WriteVarint32(static_cast<std::uint32_t>(message.ByteSizeLong()));
      message.SerializeWithCachedSizes(&coded);
    };
    pb::GlobalMetadata metadata;
    metadata.set_version(trace.version);
    for (const auto& a : trace.metadata)
      to_proto(a, *metadata.add_attr());
    write(metadata);
    pb::Node message;
    for (const auto& node : trace.nodes) {
      message.Clear();
      message.set_id(node.id);
      message.set_name(node.name);
      message.set_type(static_cast<pb::NodeType>(node.type));
      for (auto d : node.ctrl_deps)
        message.add_ctrl_deps(d);
      for (auto d : node.data_deps)
        message.add_data_deps(d);
      message.set_start_time_micros(node.start_time_micros);
      message.set_duration_micros(node.duration_micros);
      for (const auto& a : node.attrs)
        to_proto(a, *message.add_attr());
      write(message);
    }
  }
}

void write_et_file(const fs::path& path, const Trace& trace) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw platforms::InputError({fmt::format("{}: cannot write the Chakra trace file", path.string())});
  write_et(out, trace);
  out.flush();
  if (!out)
    throw platforms::InputError({fmt::format("{}: cannot write the Chakra trace file", path.string())});
}

std::vector<RankFile> find_trace_files(const fs::path& where) {
  // name.<rank>.et, possibly name.<rank>.et.gz
  static const std::regex rank_file(R"((.*)\.(\d+)\.et(\.gz)?)");
  std::map<std::string, std::map<int, fs::path>> by_prefix;
  // Only prefix `wanted` when given (the prefix form).
  const auto consider = [&](const fs::path& file, const std::string* wanted) {
    std::smatch m;
    const std::string name = file.filename().string();
    if (!std::regex_match(name, m, rank_file) || (wanted != nullptr && m[1].str() != *wanted))
      return;
    const auto status = platforms::path_status(file);
    if (status.kind == platforms::PathKind::unreadable)
      throw platforms::InputError({fmt::format("{}: cannot read this Chakra trace file: {}", file.string(),
                                               platforms::describe_path_error(status.error))});
    if (status.kind != platforms::PathKind::regular_file)
      return;  // a folder (or a dangling link) named like a rank file is not one
    // A rank beyond any cluster (ranks are GPUs, at most 2^30) is not read as a number.
    const std::string digits = m[2].str();
    int rank = 0;
    const auto [ptr, parsed] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (parsed != std::errc() || ptr != digits.data() + digits.size() || rank > (1 << 30))
      throw platforms::InputError({fmt::format(
          "{}: rank {} is beyond the most GPUs a cluster has (2^30); expected <name>.<rank>.et with rank "
          "0..N-1",
          file.string(), digits)});
    by_prefix[m[1].str()][rank] = file;
  };
  const auto status = platforms::path_status(where);
  if (status.kind == platforms::PathKind::unreadable)
    throw platforms::InputError({fmt::format("{}: cannot read the Chakra trace: {}", where.string(),
                                             platforms::describe_path_error(status.error))});
  if (status.kind == platforms::PathKind::directory) {
    for (const auto& entry : platforms::list_directory(where, "Chakra trace folder"))
      consider(entry, nullptr);
  } else if (status.kind == platforms::PathKind::regular_file) {
    // One file: a one-rank trace, whatever its name.
    return {RankFile{0, where}};
  } else if (status.kind == platforms::PathKind::missing) {
    const fs::path dir = where.has_parent_path() ? where.parent_path() : fs::path(".");
    const std::string wanted_prefix = where.filename().string();
    if (platforms::path_status(dir).kind == platforms::PathKind::directory)
      for (const auto& entry : platforms::list_directory(dir, "Chakra trace folder"))
        consider(entry, &wanted_prefix);
  }
  if (by_prefix.empty())
    throw platforms::InputError({fmt::format(
        "{}: no Chakra trace files: expected a folder of <name>.<rank>.et files, or the prefix <dir>/<name> "
        "of such files, or one .et file",
        where.string())});
  if (by_prefix.size() > 1) {
    std::string prefixes;
    for (const auto& [prefix, files] : by_prefix)
      prefixes += fmt::format("{}{} ({} files)", prefixes.empty() ? "" : ", ", prefix, files.size());
    throw platforms::InputError(
        {fmt::format("{}: holds the files of several traces ({}); give the prefix of one, e.g. {}",
                     where.string(), prefixes, (where / by_prefix.begin()->first).string())});
  }
  const auto& files = by_prefix.begin()->second;
  std::vector<RankFile> result;
  for (const auto& [rank, path] : files) {
    if (rank != static_cast<int>(result.size()))
      throw platforms::InputError({fmt::format(
          "{}: the trace's ranks must be 0..N-1, one file each, but rank {} has no file (next is {})",
          where.string(), result.size(), path.filename().string())});
    result.push_back(RankFile{rank, path});
  }
  return result;
}

}  // namespace trainsim::chakra
