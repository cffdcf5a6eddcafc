#include "analysis/reporters/run_archive.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <istream>
#include <ostream>
#include <stdexcept>
#include <type_traits>

#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::analysis {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'U', 'N', '\0', '\0', '\1'};
constexpr std::uint32_t kVersion = 4;  // 3: graph fingerprint instead of the graph; 4: representation
constexpr std::uint32_t kEndMark = 0x454e4421;  // "END!"

class Writer {
 public:
  explicit Writer(std::ostream& out) : out_(out) {}
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    out_.write(bytes, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    out_.write(s.data(), static_cast<std::streamsize>(s.size()));
  }

 private:
  std::ostream& out_;
};

class Reader {
 public:
  explicit Reader(std::istream& in) : in_(in) {}
  template <typename T>
  T get() {
    char bytes[sizeof(T)];
    if (!in_.read(bytes, sizeof(T)))
      throw std::runtime_error("the run archive is truncated");
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
  // A count, bounded so that a corrupt file cannot ask for terabytes.
  std::size_t count(const char* what, std::uint64_t limit = 1ull << 36) {
    const auto n = get<std::uint64_t>();
    if (n > limit)
      throw std::runtime_error(std::string("the run archive is corrupt: implausible ") + what + " count");
    return static_cast<std::size_t>(n);
  }
  std::string get_string() {
    const std::size_t n = count("string length", 1ull << 32);
    std::string s(n, '\0');
    if (n > 0 && !in_.read(s.data(), static_cast<std::streamsize>(n)))
      throw std::runtime_error("the run archive is truncated");
    return s;
  }

 private:
  std::istream& in_;
};

void check(bool ok, const char* what) {
  if (!ok)
    throw std::runtime_error(std::string("the run archive is corrupt: ") + what);
}

}  // namespace

void write_run_archive(std::ostream& out, const std::string& metadata_json, const workloads::TaskGraph& graph,
                       const Timeline& timeline) {
  out.write(kMagic, sizeof(kMagic));
  Writer w(out);
  w.put(kVersion);
  w.put_string(metadata_json);

  w.put<std::int32_t>(graph.gpu_count);
  w.put<std::uint64_t>(graph.size());
  w.put<std::uint64_t>(workloads::graph_fingerprint(graph));

  w.put<std::uint64_t>(timeline.records.size());
  for (const auto& r : timeline.records) {
    w.put<std::uint64_t>(r.task);
    w.put<std::int32_t>(r.gpu);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(r.stream));
    w.put<double>(r.start_s);
    w.put<double>(r.end_s);
  }
  w.put<double>(timeline.end_s);
  w.put<std::uint64_t>(timeline.links.size());
  for (const auto& l : timeline.links) {
    w.put_string(l.name);
    w.put<double>(l.bandwidth_Bps);
    w.put<double>(l.latency_s);
  }
  w.put<std::uint64_t>(timeline.flows.size());
  for (const auto& f : timeline.flows) {
    w.put<std::uint64_t>(f.task);
    w.put<std::int32_t>(f.src_gpu);
    w.put<std::int32_t>(f.dst_gpu);
    w.put<double>(f.bytes);
    w.put<double>(f.start_s);
    w.put<double>(f.end_s);
    w.put<std::uint32_t>(f.first_link);
    w.put<std::uint32_t>(f.link_count);
  }
  w.put<std::uint64_t>(timeline.flow_links.size());
  for (auto l : timeline.flow_links)
    w.put<std::uint32_t>(l);
  w.put<std::uint64_t>(timeline.gpu_energy_J.size());
  for (double j : timeline.gpu_energy_J)
    w.put<double>(j);
  // Collective choices, by task id (the map's own order is not stable).
  std::vector<std::pair<workloads::TaskId, CollectiveChoice>> choices(timeline.collectives.begin(),
                                                                      timeline.collectives.end());
  std::sort(choices.begin(), choices.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  w.put<std::uint64_t>(choices.size());
  for (const auto& [task, c] : choices) {
    w.put<std::uint64_t>(task);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.algorithm));
    w.put<std::int32_t>(c.channels);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.fidelity));
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.representation));
  }
  w.put(kEndMark);
}

RunArchive read_run_archive(std::istream& in) {
  char magic[sizeof(kMagic)];
  if (!in.read(magic, sizeof(magic)) || std::memcmp(magic, kMagic, sizeof(kMagic)) != 0)
    throw std::runtime_error("not a trainsim run archive (wrong magic bytes)");
  Reader r(in);
  const auto version = r.get<std::uint32_t>();
  if (version != kVersion)
    throw std::runtime_error("run archive format version " + std::to_string(version) +
                             ", this trainsim reads " + std::to_string(kVersion) +
                             ": run the scenario again");
  RunArchive a;
  a.metadata_json = r.get_string();

  a.gpu_count = r.get<std::int32_t>();
  check(a.gpu_count >= 0, "negative GPU count");
  a.task_count = r.get<std::uint64_t>();
  a.graph_fingerprint = r.get<std::uint64_t>();
  const std::uint64_t tasks = a.task_count;
  const int gpus = a.gpu_count;

  auto& tl = a.timeline;
  tl.records.resize(r.count("record"));
  for (auto& rec : tl.records) {
    rec.task = r.get<std::uint64_t>();
    rec.gpu = r.get<std::int32_t>();
    const auto stream = r.get<std::uint8_t>();
    check(rec.task < tasks && rec.gpu >= 0 && rec.gpu < gpus, "record out of range");
    check(stream < kStreamCount, "unknown stream");
    rec.stream = static_cast<Stream>(stream);
    rec.start_s = r.get<double>();
    rec.end_s = r.get<double>();
  }
  tl.end_s = r.get<double>();
  tl.links.resize(r.count("link"));
  for (auto& l : tl.links) {
    l.name = r.get_string();
    l.bandwidth_Bps = r.get<double>();
    l.latency_s = r.get<double>();
  }
  tl.flows.resize(r.count("flow"));
  for (auto& f : tl.flows) {
    f.task = r.get<std::uint64_t>();
    f.src_gpu = r.get<std::int32_t>();
    f.dst_gpu = r.get<std::int32_t>();
    f.bytes = r.get<double>();
    f.start_s = r.get<double>();
    f.end_s = r.get<double>();
    f.first_link = r.get<std::uint32_t>();
    f.link_count = r.get<std::uint32_t>();
    check(f.task < tasks && f.src_gpu >= 0 && f.src_gpu < gpus && f.dst_gpu >= 0 && f.dst_gpu < gpus,
          "flow out of range");
  }
  tl.flow_links.resize(r.count("route entry"));
  for (auto& l : tl.flow_links) {
    l = r.get<std::uint32_t>();
    check(l < tl.links.size(), "route names an unknown link");
  }
  for (const auto& f : tl.flows)
    check(std::uint64_t(f.first_link) + f.link_count <= tl.flow_links.size(), "flow route out of range");
  tl.gpu_energy_J.resize(r.count("energy"));
  for (auto& j : tl.gpu_energy_J)
    j = r.get<double>();
  const std::size_t choices = r.count("collective choice");
  for (std::size_t i = 0; i < choices; ++i) {
    const auto task = r.get<std::uint64_t>();
    CollectiveChoice c;
    const auto algorithm = r.get<std::uint8_t>();
    c.channels = r.get<std::int32_t>();
    const auto fidelity = r.get<std::uint8_t>();
    const auto representation = r.get<std::uint8_t>();
    check(task < tasks && algorithm <= static_cast<std::uint8_t>(platforms::CollectiveAlgorithm::p2p_ring) &&
              fidelity <= static_cast<std::uint8_t>(platforms::Fidelity::automatic) &&
              representation < kRepresentationCount,
          "collective choice out of range");
    c.algorithm = static_cast<platforms::CollectiveAlgorithm>(algorithm);
    c.fidelity = static_cast<platforms::Fidelity>(fidelity);
    c.representation = static_cast<Representation>(representation);
    tl.collectives.emplace(task, c);
  }
  check(r.get<std::uint32_t>() == kEndMark, "missing end mark");
  return a;
}

}  // namespace trainsim::analysis
