#include "analysis/reporters/run_archive.hpp"

#include <fmt/format.h>

#include <zstd.h>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <istream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "trainsim_version.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::analysis {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'U', 'N', '\0', '\0', '\1'};
// 3: graph fingerprint instead of the graph; 4: a checksum at the end; 5:
// each collective's representation; 6: the body zstd-compressed.
constexpr std::uint32_t kVersion = 6;
// zstd level 3 (its default): about 20x smaller than the raw body at some
// 200 MB/s on one core; higher levels gain little on these numbers.
constexpr int kZstdLevel = 3;
// A body at most this many times its compressed frame: real archives
// compress about 20x, so a larger claim is damage (or a decompression bomb).
constexpr std::uint64_t kMaxCompressionRatio = 1024;
constexpr std::uint32_t kEndMark = 0x454e4421;  // "END!"
constexpr const char* kRunSchema = "trainsim.run/1";

// FNV-1a, 64 bits: any change of one byte changes it.
class Checksum {
 public:
  void add(const char* bytes, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      hash_ ^= static_cast<unsigned char>(bytes[i]);
      hash_ *= 0x100000001b3ull;
    }
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
};

// zstd's contexts, freed however their scope ends.
struct FreeZstd {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
  void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};
using CompressionContext = std::unique_ptr<ZSTD_CCtx, FreeZstd>;
using DecompressionContext = std::unique_ptr<ZSTD_DCtx, FreeZstd>;

// Compresses what it is given into `out` as one zstd frame (with zstd's own
// content checksum), adding every compressed byte to `sum`.
class CompressedStream {
 public:
  CompressedStream(std::ostream& out, Checksum& sum) : out_(out), sum_(sum), ctx_(ZSTD_createCCtx()) {
    if (!ctx_)
      throw std::runtime_error("cannot compress the run archive: out of memory");
    ZSTD_CCtx_setParameter(ctx_.get(), ZSTD_c_compressionLevel, kZstdLevel);
    ZSTD_CCtx_setParameter(ctx_.get(), ZSTD_c_checksumFlag, 1);
    output_.resize(ZSTD_CStreamOutSize());
    input_.reserve(kChunk);
  }

  void write(const char* data, std::size_t n) {
    input_.append(data, n);
    raw_bytes_ += n;
    if (input_.size() >= kChunk)
      flush(ZSTD_e_continue);
  }
  // Ends the frame; returns the uncompressed size.
  std::uint64_t finish() {
    flush(ZSTD_e_end);
    return raw_bytes_;
  }

 private:
  static constexpr std::size_t kChunk = 1 << 20;
  void flush(ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{input_.data(), input_.size(), 0};
    for (;;) {
      ZSTD_outBuffer out{output_.data(), output_.size(), 0};
      const std::size_t left = ZSTD_compressStream2(ctx_.get(), &out, &in, mode);
      if (ZSTD_isError(left))
        throw std::runtime_error(fmt::format("cannot compress the run archive: {}", ZSTD_getErrorName(left)));
      sum_.add(output_.data(), out.pos);
      out_.write(output_.data(), static_cast<std::streamsize>(out.pos));
      if (mode == ZSTD_e_end ? left == 0 : in.pos == in.size)
        break;
    }
    input_.clear();
  }
  std::ostream& out_;
  Checksum& sum_;
  CompressionContext ctx_;
  std::string input_, output_;
  std::uint64_t raw_bytes_ = 0;
};

// The body's encoder: native little-endian numbers, doubles bit-exact.
class Writer {
 public:
  explicit Writer(CompressedStream& out) : out_(out) {}
  void bytes(const char* data, std::size_t n) { out_.write(data, n); }
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    char raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    bytes(raw, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes(s.data(), s.size());
  }

 private:
  CompressedStream& out_;
};

// One record or flow, encoded as Writer::put encodes its fields one after
// the other, to be written in one piece.
class Packed {
 public:
  template <typename T>
  void put(T value) {
    patch(size_, value);
    size_ += sizeof(T);
  }
  template <typename T>
  void patch(std::size_t at, T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::memcpy(bytes_ + at, &value, sizeof(T));
  }
  const char* data() const { return bytes_; }
  std::size_t size() const { return size_; }

 private:
  char bytes_[64] = {};
  std::size_t size_ = 0;
};

// Writes `value` to `out` and to `sum`.
template <typename T>
void put_raw(std::ostream& out, Checksum* sum, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  if (sum != nullptr)
    sum->add(raw, sizeof(T));
  out.write(raw, sizeof(T));
}

// The body of a version 6 file: the frame decompressed, refused when zstd
// finds it damaged or when it is not exactly `raw_bytes` long.
std::string decompress_body(std::string_view frame, std::uint64_t raw_bytes) {
  if (raw_bytes > kMaxCompressionRatio * frame.size() + 4096)
    throw std::runtime_error(fmt::format("the run archive is corrupt: a {}-byte frame cannot hold {} bytes",
                                         frame.size(), raw_bytes));
  const DecompressionContext ctx(ZSTD_createDCtx());
  if (!ctx)
    throw std::runtime_error("cannot read the run archive: out of memory");
  std::string body;
  body.resize(static_cast<std::size_t>(raw_bytes));
  ZSTD_inBuffer in{frame.data(), frame.size(), 0};
  ZSTD_outBuffer out{body.data(), body.size(), 0};
  std::size_t left = 1;
  while (in.pos < in.size) {
    const std::size_t before_in = in.pos, before_out = out.pos;
    left = ZSTD_decompressStream(ctx.get(), &out, &in);
    if (ZSTD_isError(left))
      throw std::runtime_error(std::string("the run archive is corrupt: ") + ZSTD_getErrorName(left));
    if (left == 0 || (in.pos == before_in && out.pos == before_out))
      break;
  }
  if (left != 0 || in.pos != in.size || out.pos != body.size())
    throw std::runtime_error("the run archive is corrupt: its compressed body does not hold what it says");
  return body;
}

// Decodes from the file's bytes; every read and every count is checked
// against what is left.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    if (bytes_.size() - pos_ < sizeof(T))
      throw std::runtime_error("the run archive is truncated");
    T value;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return value;
  }
  // A count of items of at least `item_bytes` each, checked against the
  // bytes left so that a corrupt count cannot ask for terabytes.
  std::size_t count(const char* what, std::size_t item_bytes) {
    const auto n = get<std::uint64_t>();
    if (n > (bytes_.size() - pos_) / item_bytes)
      throw std::runtime_error(
          fmt::format("the run archive is corrupt: {} {} do not fit in the {} bytes left", n, what,
                      bytes_.size() - pos_));
    return static_cast<std::size_t>(n);
  }
  std::string get_string() {
    const std::size_t n = count("string bytes", 1);
    std::string s(bytes_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::size_t left() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

void check(bool ok, const char* what) {
  if (!ok)
    throw std::runtime_error(std::string("the run archive is corrupt: ") + what);
}

// The file around a body: header, the body compressed by `write_body`,
// the body's size and the checksum.
template <typename WriteBody>
void write_sealed(std::ostream& out, WriteBody&& write_body) {
  Checksum sum;
  sum.add(kMagic, sizeof(kMagic));
  out.write(kMagic, sizeof(kMagic));
  put_raw(out, &sum, kVersion);
  CompressedStream compressed(out, sum);
  write_body(compressed);
  put_raw(out, &sum, compressed.finish());
  put_raw(out, nullptr, sum.value());
}

void write_body(CompressedStream& compressed, const std::string& metadata_json,
                const workloads::TaskGraph& graph, const Timeline& timeline) {
  Writer w(compressed);
  w.put_string(metadata_json);

  w.put<std::int32_t>(graph.gpu_count);
  w.put<std::uint64_t>(graph.size());
  w.put<std::uint64_t>(workloads::graph_fingerprint(graph));

  // Records and flows are encoded whole, once per class of a folded
  // timeline: an image differs from its record only in the fields patched.
  w.put<std::uint64_t>(timeline.records.size());
  for (const TaskRecord& first : timeline.records.recorded()) {
    Packed p;
    p.put<std::uint64_t>(first.task);
    p.put<std::int32_t>(first.gpu);
    p.put<std::uint8_t>(static_cast<std::uint8_t>(first.stream));
    p.put<double>(first.start_s);
    p.put<double>(first.end_s);
    const int n = timeline.records.images_of(first);
    for (int k = 0; k < n; ++k) {
      if (k > 0) {
        const TaskRecord r = timeline.records.image(first, k);
        p.patch<std::uint64_t>(0, r.task);
        p.patch<std::int32_t>(8, r.gpu);
        p.patch<std::uint8_t>(12, static_cast<std::uint8_t>(r.stream));
        p.patch<double>(13, r.start_s);
        p.patch<double>(21, r.end_s);
      }
      w.bytes(p.data(), p.size());
    }
  }
  w.put<double>(timeline.end_s);
  w.put<std::uint64_t>(timeline.links.size());
  for (const auto& l : timeline.links) {
    w.put_string(l.name);
    w.put<double>(l.bandwidth_Bps);
    w.put<double>(l.latency_s);
  }
  w.put<std::uint64_t>(timeline.flows.size());
  for (const FlowRecord& first : timeline.flows.recorded()) {
    Packed p;
    p.put<std::uint64_t>(first.task);
    p.put<std::int32_t>(first.src_gpu);
    p.put<std::int32_t>(first.dst_gpu);
    p.put<double>(first.bytes);
    p.put<double>(first.start_s);
    p.put<double>(first.end_s);
    p.put<std::uint32_t>(first.first_link);
    p.put<std::uint32_t>(first.link_count);
    const int n = timeline.flows.images_of(first);
    for (int k = 0; k < n; ++k) {
      if (k > 0) {
        const FlowRecord f = timeline.flows.image(first, k);
        p.patch<std::uint64_t>(0, f.task);
        p.patch<std::int32_t>(8, f.src_gpu);
        p.patch<std::int32_t>(12, f.dst_gpu);
        p.patch<double>(16, f.bytes);
        p.patch<double>(24, f.start_s);
        p.patch<double>(32, f.end_s);
        p.patch<std::uint32_t>(40, f.first_link);
        p.patch<std::uint32_t>(44, f.link_count);
      }
      w.bytes(p.data(), p.size());
    }
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

}  // namespace

void write_run_archive(std::ostream& out, const std::string& metadata_json, const workloads::TaskGraph& graph,
                       const Timeline& timeline) {
  write_sealed(out,
               [&](CompressedStream& compressed) { write_body(compressed, metadata_json, graph, timeline); });
}

void reseal_run_archive(std::string& bytes) {
  if (bytes.size() < sizeof(std::uint64_t))
    return;
  const std::size_t body = bytes.size() - sizeof(std::uint64_t);
  Checksum sum;
  sum.add(bytes.data(), body);
  const std::uint64_t v = sum.value();
  std::memcpy(bytes.data() + body, &v, sizeof v);
}

RunArchive read_run_archive(std::istream& in) {
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_run_archive(bytes);
}

RunArchive parse_run_archive(std::string_view bytes) {
  return decode_run_archive_body(run_archive_body(bytes));
}

std::string run_archive_body(std::string_view bytes) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw std::runtime_error("not a trainsim run archive (wrong magic bytes)");
  Reader r(bytes.substr(sizeof(kMagic)));
  const auto version = r.get<std::uint32_t>();
  if (version != kVersion)
    throw std::runtime_error("run archive format version " + std::to_string(version) +
                             ", this trainsim reads " + std::to_string(kVersion) +
                             ": run the scenario again");
  constexpr std::size_t kHeader = sizeof(kMagic) + sizeof(kVersion);
  constexpr std::size_t kTrailer = 2 * sizeof(std::uint64_t);  // body size, checksum
  if (bytes.size() < kHeader + kTrailer)
    throw std::runtime_error("the run archive is truncated");
  const std::string_view summed = bytes.substr(0, bytes.size() - sizeof(std::uint64_t));
  std::uint64_t stored = 0, raw_bytes = 0;
  std::memcpy(&stored, bytes.data() + summed.size(), sizeof stored);
  Checksum sum;
  sum.add(summed.data(), summed.size());
  if (sum.value() != stored)
    throw std::runtime_error(
        "the run archive is corrupt or truncated: its checksum does not match its contents (run the scenario "
        "again)");
  std::memcpy(&raw_bytes, bytes.data() + bytes.size() - kTrailer, sizeof raw_bytes);
  return decompress_body(bytes.substr(kHeader, bytes.size() - kHeader - kTrailer), raw_bytes);
}

std::string seal_run_archive(std::string_view body) {
  std::ostringstream out;
  write_sealed(out, [&](CompressedStream& compressed) { compressed.write(body.data(), body.size()); });
  return std::move(out).str();
}

RunArchive decode_run_archive_body(std::string_view body) {
  Reader r(body);
  RunArchive a;
  a.metadata_json = r.get_string();

  a.gpu_count = r.get<std::int32_t>();
  check(a.gpu_count >= 0, "negative GPU count");
  a.task_count = r.get<std::uint64_t>();
  a.graph_fingerprint = r.get<std::uint64_t>();
  const std::uint64_t tasks = a.task_count;
  const int gpus = a.gpu_count;

  auto& tl = a.timeline;
  tl.records.recorded().resize(r.count("records", 29));
  for (auto& rec : tl.records.recorded()) {
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
  tl.links.resize(r.count("links", 24));
  for (auto& l : tl.links) {
    l.name = r.get_string();
    l.bandwidth_Bps = r.get<double>();
    l.latency_s = r.get<double>();
  }
  tl.flows.recorded().resize(r.count("flows", 48));
  for (auto& f : tl.flows.recorded()) {
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
  tl.flow_links.resize(r.count("route entries", 4));
  for (auto& l : tl.flow_links) {
    l = r.get<std::uint32_t>();
    check(l < tl.links.size(), "route names an unknown link");
  }
  for (const auto& f : tl.flows)
    check(std::uint64_t(f.first_link) + f.link_count <= tl.flow_links.size(), "flow route out of range");
  tl.gpu_energy_J.resize(r.count("energy figures", 8));
  for (auto& j : tl.gpu_energy_J)
    j = r.get<double>();
  const std::size_t choices = r.count("collective choices", 14);
  for (std::size_t i = 0; i < choices; ++i) {
    const auto task = r.get<std::uint64_t>();
    CollectiveChoice c;
    const auto algorithm = r.get<std::uint8_t>();
    c.channels = r.get<std::int32_t>();
    const auto fidelity = r.get<std::uint8_t>();
    const auto representation = r.get<std::uint8_t>();
    check(task < tasks && algorithm <= static_cast<std::uint8_t>(platforms::kLastCollectiveAlgorithm) &&
              fidelity <= static_cast<std::uint8_t>(platforms::Fidelity::automatic) &&
              representation < kRepresentationCount,
          "collective choice out of range");
    c.algorithm = static_cast<platforms::CollectiveAlgorithm>(algorithm);
    c.fidelity = static_cast<platforms::Fidelity>(fidelity);
    c.representation = static_cast<Representation>(representation);
    tl.collectives.emplace(task, c);
  }
  check(r.get<std::uint32_t>() == kEndMark, "missing end mark");
  check(r.left() == 0, "bytes after the end mark");
  return a;
}

std::string run_metadata_json(const RunMetadata& metadata) {
  nlohmann::ordered_json meta = {{"schema", kRunSchema},
                                 {"trainsim_version", version_string},
                                 {"scenario_file", metadata.scenario_file},
                                 {"overrides", metadata.overrides},
                                 {"scenario_yaml", metadata.scenario_yaml}};
  if (metadata.balance)
    meta["balance"] = to_json(*metadata.balance);
  if (metadata.repeats)
    meta["repeats"] = to_json(*metadata.repeats);
  return meta.dump();
}

RunMetadata run_metadata_from_json(std::string_view text) {
  try {
    const auto meta = nlohmann::json::parse(text);
    if (!meta.is_object() || !meta.contains("schema") || meta.at("schema") != kRunSchema)
      throw std::runtime_error(fmt::format("metadata schema is not {}", kRunSchema));
    RunMetadata m;
    m.trainsim_version = meta.at("trainsim_version").get<std::string>();
    m.scenario_file = meta.at("scenario_file").get<std::string>();
    m.overrides = meta.at("overrides").get<std::vector<std::string>>();
    m.scenario_yaml = meta.at("scenario_yaml").get<std::string>();
    if (meta.contains("balance"))
      m.balance = balance_outcome_from_json(meta.at("balance"));
    if (meta.contains("repeats"))
      m.repeats = repeated_runs_from_json(meta.at("repeats"));
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("the run archive's metadata is malformed: {}", e.what()));
  }
}

}  // namespace trainsim::analysis
