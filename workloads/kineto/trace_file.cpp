#include "workloads/kineto/trace_file.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <unordered_map>

#include "platforms/directory_walk.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/printable_text.hpp"

namespace trainsim::kineto {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// How many bad events one file's message lists before it only counts.
constexpr std::size_t kListedEventProblems = 20;

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gunzip(const std::string& bytes, const fs::path& path, const std::string& what,
                   std::size_t max_bytes) {
  z_stream z{};
  // 16 + MAX_WBITS: a gzip header and trailer around the deflate stream.
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    throw std::runtime_error("zlib: inflateInit2 failed");
  std::string out;
  char buffer[1 << 16];
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = sizeof buffer;
    status = inflate(&z, Z_NO_FLUSH);
    if (status != Z_OK && status != Z_STREAM_END) {
      const std::string reason = status == Z_BUF_ERROR ? "it ends early (truncated)"
                                 : z.msg != nullptr    ? std::string(z.msg)
                                                       : fmt::format("zlib status {}", status);
      inflateEnd(&z);
      throw platforms::InputError({fmt::format(
          "{}: not a valid gzip file: {} (expected a {} as PyTorch writes it, .json or .json.gz)",
          path.string(), reason, what)});
    }
    out.append(buffer, sizeof buffer - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      throw platforms::InputError(
          {fmt::format("{}: decompresses to more than {} MiB, more than trainsim reads for a {}",
                       path.string(), max_bytes >> 20, what)});
    }
  }
  inflateEnd(&z);
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Kineto's categories (PyTorch 1.8+ and the capitalised ones of older
// traces) that trainsim reads; the rest (python_function, ac2g flows,
// cpu_instant_event, memory, Trace spans, ...) are dropped while parsing.
enum class Category { kernel, memcpy, memset, runtime, cpu_op, annotation, gpu_annotation, other };

Category category_of(std::string_view cat) {
  static const std::unordered_map<std::string, Category> kinds = {
      {"kernel", Category::kernel},
      {"gpu_memcpy", Category::memcpy},
      {"memcpy", Category::memcpy},
      {"gpu_memset", Category::memset},
      {"memset", Category::memset},
      {"cuda_runtime", Category::runtime},
      {"cuda_driver", Category::runtime},
      {"runtime", Category::runtime},
      {"cpu_op", Category::cpu_op},
      {"operator", Category::cpu_op},
      {"user_annotation", Category::annotation},
      {"gpu_user_annotation", Category::gpu_annotation},
  };
  const auto it = kinds.find(lower(cat));
  return it == kinds.end() ? Category::other : it->second;
}

const json* member(const json& object, const char* key) {
  if (!object.is_object())
    return nullptr;
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A field that is sometimes spelled in lower case ("external id" in
// PyTorch 1.x traces).
const json* member(const json& object, const char* key, const char* alternative) {
  const json* v = member(object, key);
  return v != nullptr ? v : member(object, alternative);
}

std::optional<double> number(const json* v) {
  if (v == nullptr || !v->is_number())
    return std::nullopt;
  const double d = v->get<double>();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

// Integers written as numbers or as text ("stream": "0x0" in ROCm traces).
std::optional<std::int64_t> integer(const json* v) {
  if (v == nullptr)
    return std::nullopt;
  if (v->is_number_integer())
    return v->get<std::int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9e15)
      return static_cast<std::int64_t>(d);
    return std::nullopt;
  }
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    std::int64_t value = 0;
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const char* begin = s.data() + (hex ? 2 : 0);
    const auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), value, hex ? 16 : 10);
    if (ec == std::errc() && ptr == s.data() + s.size())
      return value;
  }
  return std::nullopt;
}

std::string text(const json* v) {
  if (v == nullptr)
    return "";
  if (v->is_string())
    return v->get<std::string>();
  if (v->is_number() || v->is_boolean())
    return v->dump();
  return "";
}

// "[0, 1, 2]" (a string, as PyTorch writes "Process Group Ranks") or a list.
std::vector<int> rank_list(const json* v) {
  std::vector<int> ranks;
  if (v == nullptr)
    return ranks;
  if (v->is_array()) {
    for (const auto& r : *v)
      if (auto i = integer(&r))
        ranks.push_back(static_cast<int>(*i));
    return ranks;
  }
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    std::size_t i = 0;
    while (i < s.size()) {
      if (std::isdigit(static_cast<unsigned char>(s[i]))) {
        int value = 0;
        const auto [ptr, ec] = std::from_chars(s.data() + i, s.data() + s.size(), value);
        if (ec != std::errc())
          return {};
        ranks.push_back(value);
        i = static_cast<std::size_t>(ptr - s.data());
      } else {
        ++i;
      }
    }
  }
  return ranks;
}

// "Input Dims": per input, [d0, d1, ...] for a tensor, [[...], [...]] for a
// tensor list, [] for a scalar.
std::vector<std::vector<Shape>> input_shapes(const json* dims) {
  std::vector<std::vector<Shape>> inputs;
  if (dims == nullptr || !dims->is_array())
    return inputs;
  const auto shape_of = [](const json& v, Shape& shape) {
    for (const auto& d : v) {
      auto i = integer(&d);
      if (!i)
        return false;
      shape.push_back(*i);
    }
    return true;
  };
  for (const auto& input : *dims) {
    std::vector<Shape> shapes;
    if (input.is_array() && !input.empty() && input.front().is_array()) {
      for (const auto& t : input) {
        Shape shape;
        if (t.is_array() && shape_of(t, shape))
          shapes.push_back(std::move(shape));
      }
    } else if (input.is_array() && !input.empty()) {
      Shape shape;
      if (shape_of(input, shape))
        shapes.push_back(std::move(shape));
    }
    inputs.push_back(std::move(shapes));
  }
  return inputs;
}

std::vector<std::string> strings(const json* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array())
    return out;
  for (const auto& s : *v)
    out.push_back(text(&s));
  return out;
}

// NCCL's collective from a kernel name: ncclKernel_AllReduce_RING_LL_Sum_float,
// ncclDevKernel_AllGather_RING_LL, ncclDevKernel_SendRecv, ...
std::string collective_from_name(std::string_view name) {
  static const std::vector<std::pair<std::string_view, std::string_view>> words = {
      {"AllReduce", "allreduce"}, {"AllGather", "allgather"}, {"ReduceScatter", "reduce_scatter"},
      {"Broadcast", "broadcast"}, {"AllToAll", "all_to_all"}, {"SendRecv", "send_recv"},
      {"Send", "send"},           {"Recv", "recv"},           {"Reduce", "reduce"},
  };
  for (const auto& [word, collective] : words)
    if (name.find(word) != std::string_view::npos)
      return std::string(collective);
  return "";
}

// The NCCL metadata PyTorch writes on a communication kernel or on its
// record_param_comms op.
bool read_collective_args(const json* args, CollectiveInfo& info) {
  const json* name = member(*args, "Collective name");
  if (name == nullptr)
    return false;
  info.collective = text(name);
  info.metadata = true;
  if (auto v = integer(member(*args, "In msg nelems")))
    info.in_elements = *v;
  if (auto v = integer(member(*args, "Out msg nelems")))
    info.out_elements = *v;
  info.dtype = text(member(*args, "dtype"));
  if (auto v = integer(member(*args, "Group size")))
    info.group_size = static_cast<int>(*v);
  info.group_name = text(member(*args, "Process Group Name"));
  info.group_ranks = rank_list(member(*args, "Process Group Ranks"));
  if (info.group_size == 0 && !info.group_ranks.empty())
    info.group_size = static_cast<int>(info.group_ranks.size());
  return true;
}

// Collects a file's bad events: the first kListedEventProblems listed, the
// rest counted.
class EventProblems {
 public:
  explicit EventProblems(std::string path) : path_(std::move(path)) {}
  void add(std::uint64_t event, const json& e, const std::string& message) {
    if (listed_.size() < kListedEventProblems) {
      const std::string name = e.is_object() ? text(member(e, "name")) : "";
      listed_.push_back(fmt::format("{}: traceEvents[{}]{}: {}", path_, event,
                                    name.empty() ? "" : fmt::format(" ('{}')", shorten(name)), message));
    } else {
      ++unlisted_;
    }
  }
  void throw_if_any() const {
    if (!listed_.empty())
      throw platforms::InputError(listed_, unlisted_);
  }

 private:
  static std::string shorten(const std::string& name) {
    return name.size() > 120 ? name.substr(0, 117) + "..." : name;
  }
  std::string path_;
  std::vector<std::string> listed_;
  std::size_t unlisted_ = 0;
};

// "FILE:LINE:COLUMN" of a byte offset of the text.
std::string where_in(const std::string& text, std::size_t byte, const std::string& path) {
  byte = std::min(byte, text.size());
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}:{}", path, line, column);
}

// The events worth keeping, decided while parsing so a large trace's
// Python frames and flow arrows never take memory.
bool keep_event(json& e) {
  if (!e.is_object())
    return true;  // reported later as not an event
  const json* name = member(e, "name");
  if (name != nullptr && name->is_string() &&
      name->get_ref<const std::string&>().rfind("ProfilerStep#", 0) == 0)
    return true;
  const json* cat = member(e, "cat");
  if (cat == nullptr || !cat->is_string())
    return false;
  switch (category_of(cat->get_ref<const std::string&>())) {
    case Category::kernel:
    case Category::memcpy:
    case Category::memset:
    case Category::runtime:
      return true;
    case Category::cpu_op: {
      // Only what a shape or NCCL's metadata is read from.
      if (auto it = e.find("args"); it != e.end() && it->is_object())
        for (const char* unused : {"Input Strides", "Ev Idx", "Record function id", "Sequence number",
                                   "Fwd thread id", "Python id", "Python parent id"})
          it->erase(unused);
      return true;
    }
    case Category::annotation:
    case Category::gpu_annotation:
    case Category::other:
      return false;
  }
  return false;
}

// What parse_json keeps of a trace: the top-level members but traceEvents,
// and the events worth keeping (keep_event), each with its position.
struct ParsedTrace {
  enum class Form { object, array, other } form = Form::other;
  json top = json::object();  // every top-level member but traceEvents
  bool has_events = false;    // traceEvents was there (or the root is the array of events)
  std::string events_kind;    // what traceEvents was when not a list: "a map", "text", ...
  std::vector<std::pair<std::uint64_t, json>> events;
};

// Builds a value from SAX calls (a container's members, in order).
class ValueBuilder {
 public:
  bool done() const { return stack_.empty() && started_; }
  json take() {
    started_ = false;
    return std::move(value_);
  }
  void scalar(json v) { place(std::move(v)); }
  void key(std::string k) { key_ = std::move(k); }
  void open(json container) { stack_.push_back(place(std::move(container))); }
  void close() { stack_.pop_back(); }

 private:
  json* place(json v) {
    if (stack_.empty()) {
      value_ = std::move(v);
      started_ = true;
      return &value_;
    }
    json& parent = *stack_.back();
    if (parent.is_object())
      return &(parent[key_] = std::move(v));
    parent.push_back(std::move(v));
    return &parent.back();
  }
  json value_;
  std::vector<json*> stack_;
  std::string key_;
  bool started_ = false;
};

// A SAX handler that keeps the top-level members and the events worth
// keeping, and drops the rest as each event ends: a trace's Python frames
// and flow arrows never take memory. (nlohmann's DOM parser with a
// discarding callback searches the whole event list on each discard.)
class TraceSax final : public nlohmann::json_sax<json> {
 public:
  TraceSax(ParsedTrace& out, const std::string& path) : out_(out), path_(path) {}

  bool null() override { return scalar(nullptr); }
  bool boolean(bool v) override { return scalar(v); }
  bool number_integer(number_integer_t v) override { return scalar(v); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(v); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(v); }
  bool string(string_t& v) override { return scalar(v); }
  bool binary(binary_t&) override { return scalar(nullptr); }
  bool key(string_t& k) override {
    if (building_)
      builder_.key(k);
    else if (depth_ == 1)
      top_key_ = k;
    return true;
  }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error_byte_ = position;
    error_ = e.what();
    return false;
  }
  std::size_t error_byte() const { return error_byte_; }
  const std::string& error() const { return error_; }

 private:
  // An element of the event list: [events...] at depth 1, or
  // {"traceEvents": [events...]} at depth 2.
  bool in_event_list() const {
    return (out_.form == ParsedTrace::Form::array && depth_ == 1) ||
           (out_.form == ParsedTrace::Form::object && depth_ == 2 && top_key_ == "traceEvents" &&
            events_open_);
  }
  bool begin_value() {
    if (building_)
      return true;
    if (in_event_list() || (out_.form == ParsedTrace::Form::object && depth_ == 1)) {
      building_ = true;
      build_depth_ = depth_;
    }
    return true;
  }
  bool scalar(json v) {
    if (depth_ == 0) {
      out_.form = ParsedTrace::Form::other;
      return true;
    }
    begin_value();
    if (!building_)
      return true;
    builder_.scalar(std::move(v));
    finish_value();
    return true;
  }
  bool open(json container) {
    if (depth_ == 0) {
      out_.form = container.is_object() ? ParsedTrace::Form::object : ParsedTrace::Form::array;
      out_.has_events = !container.is_object();
      ++depth_;
      return true;
    }
    if (!building_ && out_.form == ParsedTrace::Form::object && depth_ == 1 && top_key_ == "traceEvents") {
      out_.has_events = true;
      if (container.is_array()) {
        events_open_ = true;
        ++depth_;
        return true;
      }
    }
    begin_value();
    ++depth_;
    if (building_)
      builder_.open(std::move(container));
    return true;
  }
  bool close() {
    --depth_;
    if (building_) {
      builder_.close();
      finish_value();
    } else if (events_open_ && depth_ == 1) {
      events_open_ = false;
    }
    return true;
  }
  void finish_value() {
    if (!builder_.done())
      return;
    building_ = false;
    json v = builder_.take();
    if (build_depth_ == 1 && out_.form == ParsedTrace::Form::object) {
      if (top_key_ == "traceEvents")
        out_.events_kind = v.is_object() ? "a map" : v.is_string() ? "text" : "not a list";
      else
        out_.top[top_key_] = std::move(v);
      return;
    }
    if (++count_ > kMaxTraceEvents)
      throw platforms::InputError(
          {fmt::format("{}: holds more than {} events, more than trainsim reads from one rank's trace", path_,
                       kMaxTraceEvents)});
    if (keep_event(v))
      out_.events.emplace_back(count_ - 1, std::move(v));
  }

  ParsedTrace& out_;
  const std::string& path_;
  int depth_ = 0;
  std::string top_key_;
  bool events_open_ = false;
  bool building_ = false;
  int build_depth_ = 0;
  ValueBuilder builder_;
  std::uint64_t count_ = 0;
  std::size_t error_byte_ = 0;
  std::string error_;
};

ParsedTrace parse_json(const std::string& text, const std::string& path) {
  ParsedTrace out;
  TraceSax sax(out, path);
  if (!json::sax_parse(text, &sax)) {
    // nlohmann's message starts "[json.exception.parse_error.101] parse error at line 1, column 2: ...".
    std::string what = sax.error();
    if (const auto colon = what.find(": "); colon != std::string::npos)
      what = what.substr(colon + 2);
    throw platforms::InputError(
        {fmt::format("{}: not valid JSON: {} (expected a PyTorch profiler trace, Chrome trace format)",
                     where_in(text, sax.error_byte() == 0 ? 0 : sax.error_byte() - 1, path), what)});
  }
  return out;
}

struct Reader {
  const std::string& path;
  const KernelClassTable& classes;
  RankTrace trace;
  EventProblems problems;
  KernelClassifier classifier;
  std::unordered_map<std::string, std::uint32_t> name_index;
  std::unordered_map<std::int64_t, int> op_of_external;  // all CPU ops by External id
  std::vector<CpuOp> all_ops;
  std::unordered_map<std::int64_t, Launch> launch_of;                   // runtime calls by correlation
  std::vector<std::pair<CollectiveInfo, std::int64_t>> op_collectives;  // record_param_comms

  Reader(const std::string& p, const KernelClassTable& c) : path(p), classes(c), problems(p), classifier(c) {}

  std::uint32_t intern(const std::string& name) {
    const auto [it, added] = name_index.emplace(name, static_cast<std::uint32_t>(trace.names.size()));
    if (added)
      trace.names.push_back(name);
    return it->second;
  }

  // ts and dur of a complete event; errors name what is missing.
  bool times(std::uint64_t index, const json& e, double& start, double& duration, std::string_view what) {
    const json* ph = member(e, "ph");
    if (ph != nullptr && text(ph) != "X") {
      problems.add(index, e,
                   fmt::format("a {} event with ph '{}' (expected a complete event, ph: X, as "
                               "Kineto writes)",
                               what, text(ph)));
      return false;
    }
    const auto ts = number(member(e, "ts"));
    const auto dur = number(member(e, "dur"));
    if (!ts) {
      problems.add(index, e,
                   fmt::format("{} event: 'ts' is {} (expected its start in microseconds)", what,
                               member(e, "ts") == nullptr ? "missing" : "not a number"));
      return false;
    }
    if (!dur || *dur < 0) {
      problems.add(index, e,
                   fmt::format("{} event: 'dur' is {} (expected its duration in microseconds, >= 0)", what,
                               member(e, "dur") == nullptr ? "missing"
                               : dur                       ? fmt::format("{}", *dur)
                                                           : "not a number"));
      return false;
    }
    start = *ts;
    duration = *dur;
    return true;
  }

  void read_kernel(std::uint64_t index, const json& e, Category category) {
    const json* name = member(e, "name");
    if (name == nullptr || !name->is_string()) {
      problems.add(index, e, "a GPU event without a name (expected the kernel's name as text)");
      return;
    }
    Kernel k;
    if (!times(index, e, k.start_us, k.duration_us,
               category == Category::kernel   ? "kernel"
               : category == Category::memcpy ? "memcpy"
                                              : "memset"))
      return;
    k.event = index;
    k.name = intern(name->get<std::string>());
    k.kernel_class = classifier.classify(trace.names[k.name]);
    static const json kEmpty = json::object();
    const json* args_ptr = member(e, "args");
    const json& args = args_ptr != nullptr && args_ptr->is_object() ? *args_ptr : kEmpty;
    // Device and stream from args (Kineto), else from pid / tid (the
    // trace's GPU rows).
    if (auto d = integer(member(args, "device")))
      k.device = static_cast<int>(*d);
    else if (auto p = integer(member(e, "pid")))
      k.device = static_cast<int>(*p);
    if (auto s = integer(member(args, "stream")))
      k.stream = *s;
    else if (auto t = integer(member(e, "tid")))
      k.stream = *t;
    if (auto c = integer(member(args, "correlation")))
      k.correlation = *c;
    if (auto x = integer(member(args, "External id", "external id")))
      k.external_id = *x;
    for (const auto& [key, out] : {std::pair{"grid", &k.grid}, std::pair{"block", &k.block}}) {
      const json* v = member(args, key);
      if (v != nullptr && v->is_array())
        for (std::size_t i = 0; i < 3 && i < v->size(); ++i)
          if (auto n = integer(&(*v)[i]))
            (*out)[i] = static_cast<std::int32_t>(*n);
    }
    if (classes.at(k.kernel_class).role == KernelRole::communication) {
      CollectiveInfo info;
      if (!read_collective_args(&args, info))
        info.collective = collective_from_name(trace.names[k.name]);
      k.collective = static_cast<int>(trace.collectives.size());
      trace.collectives.push_back(std::move(info));
    }
    trace.kernels.push_back(k);
  }

  void read_runtime(const json& e) {
    const json* args = member(e, "args");
    if (args == nullptr)
      return;
    const auto correlation = integer(member(*args, "correlation"));
    const auto ts = number(member(e, "ts"));
    if (!correlation || !ts)
      return;  // a call that launched nothing trainsim reads
    Launch l;
    l.correlation = *correlation;
    l.start_us = *ts;
    l.duration_us = number(member(e, "dur")).value_or(0);
    if (auto t = integer(member(e, "tid")))
      l.thread = *t;
    launch_of.emplace(l.correlation, l);
  }

  void read_cpu_op(const json& e) {
    const json* args = member(e, "args");
    if (args == nullptr || !args->is_object())
      return;
    const auto id = integer(member(*args, "External id", "external id"));
    const json* name = member(e, "name");
    if (!id || name == nullptr || !name->is_string())
      return;
    CpuOp op;
    op.name = name->get<std::string>();
    op.external_id = *id;
    op.start_us = number(member(e, "ts")).value_or(0);
    op.duration_us = number(member(e, "dur")).value_or(0);
    if (auto t = integer(member(e, "tid")))
      op.thread = *t;
    const json* dims = member(*args, "Input Dims");
    if (dims != nullptr)
      trace.shapes_recorded = true;
    op.inputs = input_shapes(dims);
    op.types = strings(member(*args, "Input type"));
    op.concrete = strings(member(*args, "Concrete Inputs"));
    CollectiveInfo info;
    if (read_collective_args(args, info))
      op_collectives.emplace_back(std::move(info), *id);
    // An External id names the innermost op the launch ran under; when two
    // ops share one (a parent recorded after its child), the later-starting,
    // innermost one is kept.
    const auto [it, added] = op_of_external.emplace(*id, static_cast<int>(all_ops.size()));
    if (added) {
      all_ops.push_back(std::move(op));
    } else if (op.start_us >= all_ops[static_cast<std::size_t>(it->second)].start_us) {
      all_ops[static_cast<std::size_t>(it->second)] = std::move(op);
    }
  }

  void read_step(std::uint64_t index, const json& e) {
    static const std::regex step_name(R"(ProfilerStep#(\d+))");
    const std::string name = text(member(e, "name"));
    std::smatch m;
    if (!std::regex_match(name, m, step_name))
      return;
    // The GPU's copy of the span (gpu_user_annotation) is not the step.
    if (category_of(text(member(e, "cat"))) == Category::gpu_annotation)
      return;
    Step s;
    double duration = 0;
    if (!times(index, e, s.start_us, duration, "ProfilerStep"))
      return;
    s.end_us = s.start_us + duration;
    const std::string digits = m[1].str();
    std::from_chars(digits.data(), digits.data() + digits.size(), s.number);
    trace.steps.push_back(s);
  }

  void read_metadata(const json& root) {
    if (const json* info = member(root, "distributedInfo"); info != nullptr && info->is_object()) {
      if (auto r = integer(member(*info, "rank")); r && *r >= 0 && *r < (1 << 30)) {
        trace.rank = static_cast<int>(*r);
        trace.rank_recorded = true;
      }
      if (auto w = integer(member(*info, "world_size")); w && *w > 0 && *w <= (1 << 30))
        trace.world_size = static_cast<int>(*w);
      trace.backend = text(member(*info, "backend"));
      if (const json* pgs = member(*info, "pg_config"); pgs != nullptr && pgs->is_array()) {
        for (const auto& pg : *pgs) {
          ProcessGroup g;
          g.name = text(member(pg, "pg_name"));
          g.description = text(member(pg, "pg_desc"));
          g.ranks = rank_list(member(pg, "ranks"));
          trace.groups.push_back(std::move(g));
        }
      }
    }
  }

  // The traced GPU's properties: the deviceProperties entry of the device
  // most kernels ran on.
  void read_device(const json& root) {
    const json* props = member(root, "deviceProperties");
    if (props == nullptr || !props->is_array() || props->empty())
      return;
    std::map<int, std::size_t> count;
    for (const auto& k : trace.kernels)
      ++count[k.device];
    int device = -1;
    std::size_t most = 0;
    for (const auto& [d, n] : count)
      if (n > most) {
        most = n;
        device = d;
      }
    const json* chosen = &props->front();
    for (const auto& p : *props)
      if (auto id = integer(member(p, "id")); id && *id == device)
        chosen = &p;
    trace.gpu_name = text(member(*chosen, "name"));
    trace.gpu_memory_bytes = number(member(*chosen, "totalGlobalMem")).value_or(0);
    trace.gpu_sms = static_cast<int>(integer(member(*chosen, "numSms")).value_or(0));
  }

  // Times relative to the earliest event: epoch microseconds (1.7e15) would
  // leave a double a quarter-microsecond resolution.
  void rebase() {
    double base = std::numeric_limits<double>::infinity();
    for (const auto& k : trace.kernels)
      base = std::min(base, k.start_us);
    for (const auto& s : trace.steps)
      base = std::min(base, s.start_us);
    for (const auto& [c, l] : launch_of)
      base = std::min(base, l.start_us);
    if (!std::isfinite(base))
      return;
    base = std::floor(base);
    for (auto& k : trace.kernels)
      k.start_us -= base;
    for (auto& s : trace.steps) {
      s.start_us -= base;
      s.end_us -= base;
    }
    for (auto& [c, l] : launch_of)
      l.start_us -= base;
    for (auto& op : all_ops)
      op.start_us -= base;
  }

  // The innermost CPU op around each host launch, on its thread (ops of one
  // thread nest: a sweep in time with a stack of the open ones).
  std::unordered_map<std::int64_t, int> ops_around_launches() const {
    std::unordered_map<std::int64_t, int> around;
    std::map<std::int64_t, std::vector<int>> ops_of_thread;
    for (std::size_t i = 0; i < all_ops.size(); ++i)
      ops_of_thread[all_ops[i].thread].push_back(static_cast<int>(i));
    std::map<std::int64_t, std::vector<const Launch*>> launches_of_thread;
    for (const auto& [c, l] : launch_of)
      launches_of_thread[l.thread].push_back(&l);
    for (auto& [thread, launches] : launches_of_thread) {
      auto it = ops_of_thread.find(thread);
      if (it == ops_of_thread.end())
        continue;
      auto& ops = it->second;
      // By start; an op that starts with another and lasts longer holds it.
      std::sort(ops.begin(), ops.end(), [&](int a, int b) {
        const CpuOp& x = all_ops[static_cast<std::size_t>(a)];
        const CpuOp& y = all_ops[static_cast<std::size_t>(b)];
        return x.start_us != y.start_us ? x.start_us < y.start_us : x.duration_us > y.duration_us;
      });
      std::sort(launches.begin(), launches.end(),
                [](const Launch* a, const Launch* b) { return a->start_us < b->start_us; });
      std::vector<int> open;
      std::size_t next = 0;
      const auto end_of = [&](int i) {
        const CpuOp& o = all_ops[static_cast<std::size_t>(i)];
        return o.start_us + o.duration_us;
      };
      for (const Launch* l : launches) {
        while (next < ops.size() && all_ops[static_cast<std::size_t>(ops[next])].start_us <= l->start_us) {
          while (!open.empty() && end_of(open.back()) < all_ops[static_cast<std::size_t>(ops[next])].start_us)
            open.pop_back();
          open.push_back(ops[next++]);
        }
        while (!open.empty() && end_of(open.back()) < l->start_us)
          open.pop_back();
        if (!open.empty())
          around.emplace(l->correlation, open.back());
      }
    }
    return around;
  }

  void link() {
    std::stable_sort(trace.kernels.begin(), trace.kernels.end(),
                     [](const Kernel& a, const Kernel& b) { return a.start_us < b.start_us; });
    std::sort(trace.steps.begin(), trace.steps.end(),
              [](const Step& a, const Step& b) { return a.start_us < b.start_us; });
    // Ops some kernel ran for, each kept once.
    std::unordered_map<int, int> kept_op;
    std::unordered_map<std::int64_t, int> kept_launch;
    std::unordered_map<std::int64_t, const CollectiveInfo*> comm_op;
    for (const auto& [info, id] : op_collectives)
      comm_op.emplace(id, &info);
    const auto around = ops_around_launches();
    for (auto& k : trace.kernels) {
      // The op of the kernel's External id, when it holds the launch (older
      // traces number kernels and ops apart); else the op around the launch.
      int op = -1;
      const auto launch = launch_of.find(k.correlation);
      const bool launched = k.correlation >= 0 && launch != launch_of.end();
      if (auto it = op_of_external.find(k.external_id); k.external_id >= 0 && it != op_of_external.end()) {
        const CpuOp& o = all_ops[static_cast<std::size_t>(it->second)];
        if (!launched || (o.thread == launch->second.thread && o.start_us <= launch->second.start_us &&
                          launch->second.start_us <= o.start_us + o.duration_us))
          op = it->second;
      }
      if (op < 0 && launched)
        if (auto it = around.find(k.correlation); it != around.end())
          op = it->second;
      if (op >= 0) {
        const auto [kept, added] = kept_op.emplace(op, static_cast<int>(trace.ops.size()));
        if (added)
          trace.ops.push_back(all_ops[static_cast<std::size_t>(op)]);
        k.op = kept->second;
      }
      if (auto it = launch_of.find(k.correlation); k.correlation >= 0 && it != launch_of.end()) {
        const auto [kept, added] =
            kept_launch.emplace(k.correlation, static_cast<int>(trace.launches.size()));
        if (added)
          trace.launches.push_back(it->second);
        k.launch = kept->second;
      }
      // NCCL metadata on the op when the kernel has none (PyTorch < 2.1).
      if (k.collective >= 0) {
        auto& info = trace.collectives[static_cast<std::size_t>(k.collective)];
        if (auto it = comm_op.find(k.external_id); !info.metadata && it != comm_op.end())
          info = *it->second;
        if (info.collective.empty())
          info.collective = collective_from_name(trace.names[k.name]);
      }
    }
    std::sort(trace.launches.begin(), trace.launches.end(), [](const Launch& a, const Launch& b) {
      return a.thread != b.thread ? a.thread < b.thread : a.start_us < b.start_us;
    });
    // Re-point kernels at the sorted launches.
    std::unordered_map<std::int64_t, int> launch_index;
    for (std::size_t i = 0; i < trace.launches.size(); ++i)
      launch_index.emplace(trace.launches[i].correlation, static_cast<int>(i));
    for (auto& k : trace.kernels)
      if (k.launch >= 0)
        k.launch = launch_index.at(k.correlation);
  }

  // A kernel belongs to the step during which the host launched it (the
  // GPU may run it after the span ends); without a launch, to the step its
  // start falls in.
  void assign_steps() {
    if (trace.steps.empty()) {
      if (trace.kernels.empty())
        return;
      Step whole{0, trace.kernels.front().start_us, trace.kernels.front().end_us()};
      for (const auto& k : trace.kernels)
        whole.end_us = std::max(whole.end_us, k.end_us());
      trace.steps.push_back(whole);
      trace.notes.push_back(
          "no ProfilerStep# spans (the profiler ran without a schedule, or step() was never called): the "
          "whole trace is one step, from its first kernel's start to its last kernel's end");
    }
    for (auto& k : trace.kernels) {
      const double at =
          k.launch >= 0 ? trace.launches[static_cast<std::size_t>(k.launch)].start_us : k.start_us;
      const auto it = std::upper_bound(trace.steps.begin(), trace.steps.end(), at,
                                       [](double t, const Step& s) { return t < s.start_us; });
      if (it == trace.steps.begin())
        continue;
      const auto& s = *std::prev(it);
      if (at <= s.end_us)
        k.step = static_cast<int>(std::prev(it) - trace.steps.begin());
    }
  }

  void notes() {
    std::size_t without_launch = 0, comm = 0, comm_without_size = 0;
    for (const auto& k : trace.kernels) {
      without_launch += k.launch < 0;
      if (k.collective >= 0) {
        ++comm;
        comm_without_size += trace.collectives[static_cast<std::size_t>(k.collective)].in_elements < 0;
      }
    }
    if (!trace.kernels.empty() && without_launch == trace.kernels.size())
      trace.notes.push_back(
          "no host launch events (cuda_runtime) correlate with the kernels: kernels are assigned to steps by "
          "their start, and the host overhead per kernel cannot be measured");
    if (!trace.shapes_recorded)
      trace.notes.push_back(
          "no input shapes (profiled without record_shapes=True): kernels are timed by class totals only");
    if (comm_without_size > 0)
      trace.notes.push_back(fmt::format(
          "{} of {} communication kernels carry no NCCL metadata (message size, group): PyTorch before 2.1 "
          "or a trace without record_shapes; their collective is read from the kernel name",
          comm_without_size, comm));
    if (!trace.rank_recorded)
      trace.notes.push_back("no distributedInfo.rank: the rank is the file's position among those given");
  }
};

}  // namespace

RankTrace parse_trace(const std::string& json_text, const std::string& path, int position,
                      const KernelClassTable& classes) {
  const ParsedTrace parsed = parse_json(json_text, path);
  if (parsed.form == ParsedTrace::Form::object && !parsed.has_events)
    throw platforms::InputError({fmt::format(
        "{}: no traceEvents (expected a PyTorch profiler trace: an object with a traceEvents list, Chrome "
        "trace format)",
        path)});
  if (parsed.form == ParsedTrace::Form::other || !parsed.events_kind.empty())
    throw platforms::InputError(
        {fmt::format("{}: traceEvents is {} (expected a list of events, Chrome trace format)", path,
                     parsed.form == ParsedTrace::Form::other ? "missing" : parsed.events_kind)});
  Reader reader(path, classes);
  reader.trace.path = path;
  reader.trace.rank = position;
  for (const auto& [i, e] : parsed.events) {
    if (!e.is_object()) {
      reader.problems.add(i, e, "not an event (expected a map with name, cat, ph, ts, dur)");
      continue;
    }
    const std::string name = text(member(e, "name"));
    if (name.rfind("ProfilerStep#", 0) == 0) {
      reader.read_step(i, e);
      continue;
    }
    switch (category_of(text(member(e, "cat")))) {
      case Category::kernel:
      case Category::memcpy:
      case Category::memset:
        reader.read_kernel(i, e, category_of(text(member(e, "cat"))));
        break;
      case Category::runtime:
        reader.read_runtime(e);
        break;
      case Category::cpu_op:
        reader.read_cpu_op(e);
        break;
      default:
        break;
    }
  }
  reader.problems.throw_if_any();
  reader.read_metadata(parsed.top);
  reader.read_device(parsed.top);
  reader.rebase();
  reader.link();
  reader.assign_steps();
  reader.notes();
  return std::move(reader.trace);
}

std::string read_maybe_gzip_text(const fs::path& path, const std::string& what, std::size_t max_bytes) {
  std::string bytes = platforms::read_binary_input_file(path.string(), what, max_bytes);
  if (is_gzip(bytes))
    bytes = gunzip(bytes, path, what, max_bytes);
  platforms::check_utf8(bytes, path.string());
  return bytes;
}

RankTrace read_trace_file(const fs::path& path, int position, const KernelClassTable& classes) {
  return parse_trace(read_maybe_gzip_text(path, "PyTorch profiler trace", kMaxTraceBytes), path.string(),
                     position, classes);
}

std::vector<fs::path> find_trace_files(const std::vector<std::string>& paths) {
  std::vector<fs::path> files;
  const auto is_trace_name = [](const std::string& name) {
    return name.size() > 5 && (name.ends_with(".json") || name.ends_with(".json.gz"));
  };
  for (const auto& p : paths) {
    const fs::path path(p);
    const auto status = platforms::path_status(path);
    switch (status.kind) {
      case platforms::PathKind::regular_file:
        files.push_back(path);
        break;
      case platforms::PathKind::directory: {
        std::vector<fs::path> found;
        for (const auto& entry : platforms::list_directory(path, "trace folder"))
          if (is_trace_name(entry.filename().string()) &&
              platforms::path_status(entry).kind == platforms::PathKind::regular_file)
            found.push_back(entry);
        if (found.empty())
          throw platforms::InputError({fmt::format(
              "{}: no trace files in this folder (expected PyTorch profiler traces, *.json or *.json.gz, one "
              "per rank)",
              p)});
        std::sort(found.begin(), found.end());
        files.insert(files.end(), found.begin(), found.end());
        break;
      }
      case platforms::PathKind::missing:
        throw platforms::InputError(
            {fmt::format("{}: no such file or folder (expected a PyTorch profiler "
                         "trace, or a folder of them)",
                         p)});
      case platforms::PathKind::unreadable:
        throw platforms::InputError(
            {fmt::format("{}: cannot read: {}", p, platforms::describe_path_error(status.error))});
      case platforms::PathKind::other:
        throw platforms::InputError(
            {fmt::format("{}: not a regular file or a folder (expected a PyTorch profiler trace)", p)});
    }
  }
  return files;
}

std::vector<RankTrace> read_traces(const std::vector<fs::path>& files, const KernelClassTable& classes) {
  std::vector<RankTrace> traces;
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < files.size(); ++i) {
    try {
      traces.push_back(read_trace_file(files[i], static_cast<int>(i), classes));
    } catch (const platforms::InputError& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  if (!problems.empty())
    throw platforms::InputError(problems);
  std::map<int, const RankTrace*> by_rank;
  for (const auto& t : traces) {
    const auto [it, added] = by_rank.emplace(t.rank, &t);
    if (!added)
      problems.push_back(
          fmt::format("{}: rank {} again (also in {}; expected one trace per rank, each with its own "
                      "distributedInfo.rank)",
                      t.path, t.rank, it->second->path));
  }
  if (!problems.empty())
    throw platforms::InputError(problems);
  std::stable_sort(traces.begin(), traces.end(),
                   [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  return traces;
}

}  // namespace trainsim::kineto
