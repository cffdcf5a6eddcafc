#include "analysis/reporters/run_archive.hpp"

#include <fmt/format.h>

#include <zstd.h>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <istream>
#include <iterator>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "analysis/reporters/delta_rows.hpp"
#include "trainsim_version.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::analysis {
namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'U', 'N', '\0', '\0', '\1'};
// 3: graph fingerprint instead of the graph; 4: a checksum at the end; 5:
// each collective's representation; 6: the body zstd-compressed; 7: a folded
// run's summary of the fold, and its classes stored once with the fold's
// images (version 6 is still written for every run the fold did not consider);
// 8: version 7 with the flows coded as differences; 9: version 8 with the
// task records coded as differences too (delta_rows.hpp); 10: version 9
// with the graph's fingerprint by FingerprintHash::multiply_rotate.
static_assert(kRunArchiveWholeVersion == 6 && kRunArchiveRawFlowsFoldVersion == 7 &&
              kRunArchiveCodedFlowsFoldVersion == 8 && kRunArchiveCodedRecordsFoldVersion == 9 &&
              kRunArchiveFoldVersion == 10);
bool is_read(std::uint32_t version) {
  return version >= kRunArchiveWholeVersion && version <= kRunArchiveFoldVersion;
}
bool flows_coded(std::uint32_t version) {
  return version >= kRunArchiveCodedFlowsFoldVersion;
}
bool records_coded(std::uint32_t version) {
  return version >= kRunArchiveCodedRecordsFoldVersion;
}
// zstd level 3 (its default) for version 6: about 20x smaller than the raw
// body at some 200 MB/s on one core; higher levels gain little on these
// numbers, and level 1 took as long on a folded run's whole body (1.67 GB,
// 2.9 s either way) for 11% more bytes. Level 1 for version 7: on a folded
// run's classes (56.6 MB, mostly ring steps with distinct times) it is
// twice as fast as level 3 (0.09 s against 0.17 s) for 0.01% more bytes
// (docs/performance.md, "The archive per class").
// Level 1 for versions 8 to 10 too: its flows coded, level 3 would take
// ~30% longer for ~5% fewer bytes; on version 9's scale-16k body (47.7 MB)
// level -1 saves 7% of zstd's work for 14% more bytes (docs/performance.md,
// "The archive's records coded as differences").
int zstd_level(std::uint32_t version) {
  return version == kRunArchiveWholeVersion ? 3 : 1;
}
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
  CompressedStream(std::ostream& out, Checksum& sum, int level)
      : out_(out), sum_(sum), ctx_(ZSTD_createCCtx()) {
    if (!ctx_)
      throw std::runtime_error("cannot compress the run archive: out of memory");
    ZSTD_CCtx_setParameter(ctx_.get(), ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(ctx_.get(), ZSTD_c_checksumFlag, 1);
    output_.resize(ZSTD_CStreamOutSize());
    input_.resize(2 * kChunk);
  }

  // Copied into the input, compressed a megabyte at a time. Most writes are
  // one field (a million of them in scale-16k's archive): a copy into room
  // already there, where std::string::append cost ~100 instructions a call.
  void write(const char* data, std::size_t n) {
    if (n > input_.size() - used_)
      input_.resize(used_ + n);
    std::memcpy(input_.data() + used_, data, n);
    used_ += n;
    raw_bytes_ += n;
    if (used_ >= kChunk)
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
    ZSTD_inBuffer in{input_.data(), used_, 0};
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
    used_ = 0;
  }
  std::ostream& out_;
  Checksum& sum_;
  CompressionContext ctx_;
  std::string input_, output_;
  std::size_t used_ = 0;  // of input_
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

// A flow's and a task record's fields as DeltaRows code them (format
// versions 8 and 9): a flow's bytes may repeat; a record's stream is the
// flags' tag. GPUs are sign-extended, and narrowed back with a check.
using FlowRows = DeltaRows<5, 1>;
using RecordRows = DeltaRows<2, 0>;
static_assert(kStreamCount <= (0xff >> RecordRows::kTagShift) + 1);

std::uint64_t widen(std::int32_t x) {
  return static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
}
std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}
std::int32_t narrow_gpu(std::uint64_t v, const char* what) {
  const auto x = static_cast<std::int64_t>(v);
  check(x >= std::numeric_limits<std::int32_t>::min() && x <= std::numeric_limits<std::int32_t>::max(), what);
  return static_cast<std::int32_t>(x);
}

FlowRows::Row flow_row(const FlowRecord& f) {
  return {{f.task, widen(f.src_gpu), widen(f.dst_gpu), f.first_link, f.link_count},
          {bits(f.bytes)},
          bits(f.start_s),
          bits(f.end_s)};
}
FlowRecord get_flow(FlowRows& coder, Reader& r) {
  FlowRows::Row row;
  check(coder.get(r, row, check) == 0, "flow flags");
  check(row.ints[3] <= std::numeric_limits<std::uint32_t>::max() &&
            row.ints[4] <= std::numeric_limits<std::uint32_t>::max(),
        "flow route out of range");
  FlowRecord f;
  f.task = row.ints[0];
  f.src_gpu = narrow_gpu(row.ints[1], "flow GPU out of range");
  f.dst_gpu = narrow_gpu(row.ints[2], "flow GPU out of range");
  f.first_link = static_cast<std::uint32_t>(row.ints[3]);
  f.link_count = static_cast<std::uint32_t>(row.ints[4]);
  f.bytes = std::bit_cast<double>(row.extras[0]);
  f.start_s = std::bit_cast<double>(row.start);
  f.end_s = std::bit_cast<double>(row.end);
  return f;
}

RecordRows::Row record_row(const TaskRecord& r) {
  return {{r.task, widen(r.gpu)}, {}, bits(r.start_s), bits(r.end_s)};
}
TaskRecord get_record(RecordRows& coder, Reader& r) {
  RecordRows::Row row;
  const unsigned stream = coder.get(r, row, check);
  check(stream < kStreamCount, "unknown stream");
  TaskRecord rec;
  rec.task = row.ints[0];
  rec.gpu = narrow_gpu(row.ints[1], "record out of range");
  rec.stream = static_cast<Stream>(stream);
  rec.start_s = std::bit_cast<double>(row.start);
  rec.end_s = std::bit_cast<double>(row.end);
  return rec;
}

// Coded rows handed to the writer 64 KiB at a time.
template <class Coder>
class CodedRows {
 public:
  explicit CodedRows(Writer& w) : w_(w), buffer_(kChunk + Coder::kMaxBytes), end_(buffer_.data()) {}
  CodedRows(const CodedRows&) = delete;
  CodedRows& operator=(const CodedRows&) = delete;
  void put(const typename Coder::Row& row, unsigned tag = 0) {
    end_ = coder_.put(end_, row, tag);
    if (static_cast<std::size_t>(end_ - buffer_.data()) >= kChunk)
      flush();
  }
  // Hands the rest to the writer (before the next field is written).
  void flush() {
    w_.bytes(buffer_.data(), static_cast<std::size_t>(end_ - buffer_.data()));
    end_ = buffer_.data();
  }

 private:
  static constexpr std::size_t kChunk = 1 << 16;
  Writer& w_;
  Coder coder_;
  std::vector<char> buffer_;
  char* end_;
};

// The file around a body: header, the body compressed by `write_body`,
// the body's size and the checksum.
template <typename WriteBody>
void write_sealed(std::ostream& out, std::uint32_t version, WriteBody&& write_body) {
  Checksum sum;
  sum.add(kMagic, sizeof(kMagic));
  out.write(kMagic, sizeof(kMagic));
  put_raw(out, &sum, version);
  CompressedStream compressed(out, sum, zstd_level(version));
  write_body(compressed);
  put_raw(out, &sum, compressed.finish());
  put_raw(out, nullptr, sum.value());
}

bool same_choice(const CollectiveChoice& a, const CollectiveChoice& b) {
  return a.algorithm == b.algorithm && a.channels == b.channels && a.fidelity == b.fidelity &&
         a.representation == b.representation;
}

// What the body holds of a timeline: with `images`, each class once (the
// recorded records and flows, one collective choice per class) and the
// fold's images; without, every record, flow and choice.
struct Classes {
  const FoldImages* images = nullptr;
  std::vector<std::pair<workloads::TaskId, CollectiveChoice>> choices;  // by task id
};

// The collective choices, by task id (the map's own order is not stable).
std::vector<std::pair<workloads::TaskId, CollectiveChoice>> every_choice(const Timeline& timeline) {
  std::vector<std::pair<workloads::TaskId, CollectiveChoice>> choices(timeline.collectives.begin(),
                                                                      timeline.collectives.end());
  std::sort(choices.begin(), choices.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  return choices;
}

// A folded timeline is stored by class when the reader can rebuild it as it
// reads: records and flows read through the same images, of every task of
// the graph, GPU ranks mapped onto GPU ranks; each route's images numbered
// in the order of its first recorded flow (as the reader numbers them), with
// one link count; every collective choice its class's (the choice of the
// class's first task). Otherwise it is stored whole.
Classes classes_of(const workloads::TaskGraph& graph, const Timeline& timeline) {
  const FoldImages* images = timeline.records.fold_images();
  const auto whole = [&] { return Classes{nullptr, every_choice(timeline)}; };
  if (images == nullptr || images->order <= 1 || timeline.flows.fold_images() != images ||
      images->tasks.size() != graph.size() ||
      images->endpoints.size() < static_cast<std::size_t>(graph.gpu_count))
    return whole();
  const auto m = static_cast<std::size_t>(images->order);
  for (std::size_t g = 0; g < static_cast<std::size_t>(graph.gpu_count); ++g)
    if (images->endpoints.power(g, 1) >= static_cast<std::uint32_t>(graph.gpu_count))
      return whole();
  std::vector<std::uint32_t> slot_links;
  std::vector<char> seen(images->route_slot.size(), 0);
  for (const FlowRecord& f : timeline.flows.recorded()) {
    if (f.first_link >= images->route_slot.size())
      return whole();
    const std::uint32_t slot = images->route_slot[f.first_link];
    if (seen[f.first_link]) {
      if (slot_links[slot] != f.link_count)
        return whole();
      continue;
    }
    seen[f.first_link] = 1;
    if (slot != slot_links.size() || (slot + 1) * m > images->route_images.size() ||
        images->route_images[slot * m] != f.first_link)
      return whole();
    slot_links.push_back(f.link_count);
  }
  if (slot_links.size() * m != images->route_images.size())
    return whole();
  Classes c{images, {}};
  std::size_t firsts = 0, others = 0;
  for (const auto& [task, choice] : timeline.collectives) {
    if (task >= images->tasks.size())
      return whole();
    const std::uint32_t first = images->tasks.first(task);
    if (first == task) {
      c.choices.emplace_back(task, choice);
      firsts += images->tasks.fixed(task) ? 0 : 1;
      continue;
    }
    const auto* of_first = timeline.collective_choice(first);
    if (of_first == nullptr || !same_choice(*of_first, choice))
      return whole();
    ++others;
  }
  // Each class's first task has its choice and its m - 1 other tasks the same.
  if (others != firsts * (m - 1))
    return whole();
  std::sort(c.choices.begin(), c.choices.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  return c;
}

void put_fold_summary(Writer& w, const FoldSummary& fold) {
  w.put<std::uint8_t>(fold.considered ? 1 : 0);
  w.put<std::uint8_t>(fold.folded ? 1 : 0);
  w.put<std::int32_t>(fold.replicas);
  w.put<std::int32_t>(fold.simulated);
  w.put<std::int32_t>(fold.class_size);
  w.put_string(fold.folded_why);
  w.put_string(fold.stopped);
}

// A permutation as each element's image minus the element (mod 2^32): a
// rotation of replicas moves long runs of tasks by the same amount, which
// zstd then stores in a few bytes.
void put_images(Writer& w, const PermutationPowers& p) {
  w.put<std::uint64_t>(p.size());
  std::vector<std::uint32_t> block;
  block.reserve(1 << 14);
  for (std::size_t x = 0; x < p.size(); ++x) {
    block.push_back(p.power(x, 1) - static_cast<std::uint32_t>(x));
    if (block.size() == block.capacity() || x + 1 == p.size()) {
      w.bytes(reinterpret_cast<const char*>(block.data()), block.size() * sizeof(std::uint32_t));
      block.clear();
    }
  }
}

// Versions 6 to 8's records: each whole, an image's fields patched into
// its record's encoding.
void put_raw_records(Writer& w, const Timeline& timeline, const FoldImages* images) {
  for (const TaskRecord& first : timeline.records.recorded()) {
    Packed p;
    p.put<std::uint64_t>(first.task);
    p.put<std::int32_t>(first.gpu);
    p.put<std::uint8_t>(static_cast<std::uint8_t>(first.stream));
    p.put<double>(first.start_s);
    p.put<double>(first.end_s);
    const int n = images != nullptr ? 1 : timeline.records.images_of(first);
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
}

// Versions 6 and 7's flows: each whole, an image's fields patched into its
// record's encoding.
void put_raw_flows(Writer& w, const Timeline& timeline, const FoldImages* images) {
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
    const int n = images != nullptr ? 1 : timeline.flows.images_of(first);
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
}

void write_body(CompressedStream& compressed, std::uint32_t version, const std::string& metadata_json,
                const workloads::TaskGraph& graph, const Timeline& timeline, const FoldSummary& fold,
                const Classes& classes) {
  Writer w(compressed);
  w.put_string(metadata_json);

  w.put<std::int32_t>(graph.gpu_count);
  w.put<std::uint64_t>(graph.size());
  w.put<std::uint64_t>(workloads::graph_fingerprint(graph, run_archive_fingerprint_hash(version)));

  const FoldImages* images = classes.images;
  if (version != kRunArchiveWholeVersion) {
    put_fold_summary(w, fold);
    w.put<std::int32_t>(images != nullptr ? images->order : 1);
    if (images != nullptr) {
      put_images(w, images->tasks);
      put_images(w, images->endpoints);
      w.put<std::uint64_t>(images->route_images.size());
      for (const auto r : images->route_images)
        w.put<std::uint32_t>(r);
    }
  }

  // Records and flows: once per class of a folded timeline stored by
  // class (only the recorded ones), else every image.
  w.put<std::uint64_t>(images != nullptr ? timeline.records.recorded().size() : timeline.records.size());
  if (records_coded(version)) {
    CodedRows<RecordRows> rows(w);
    for (const TaskRecord& first : timeline.records.recorded()) {
      const int n = images != nullptr ? 1 : timeline.records.images_of(first);
      for (int k = 0; k < n; ++k) {
        const TaskRecord r = k == 0 ? first : timeline.records.image(first, k);
        rows.put(record_row(r), static_cast<unsigned>(r.stream));
      }
    }
    rows.flush();
  } else {
    put_raw_records(w, timeline, images);
  }
  w.put<double>(timeline.end_s);
  w.put<std::uint64_t>(timeline.links.size());
  for (const auto& l : timeline.links) {
    w.put_string(l.name);
    w.put<double>(l.bandwidth_Bps);
    w.put<double>(l.latency_s);
  }
  w.put<std::uint64_t>(images != nullptr ? timeline.flows.recorded().size() : timeline.flows.size());
  if (flows_coded(version)) {
    CodedRows<FlowRows> rows(w);
    for (const FlowRecord& first : timeline.flows.recorded()) {
      const int n = images != nullptr ? 1 : timeline.flows.images_of(first);
      for (int k = 0; k < n; ++k)
        rows.put(flow_row(k == 0 ? first : timeline.flows.image(first, k)));
    }
    rows.flush();
  } else {
    put_raw_flows(w, timeline, images);
  }
  w.put<std::uint64_t>(timeline.flow_links.size());
  for (auto l : timeline.flow_links)
    w.put<std::uint32_t>(l);
  w.put<std::uint64_t>(timeline.gpu_energy_J.size());
  for (double j : timeline.gpu_energy_J)
    w.put<double>(j);
  // Collective choices, by task id; stored by class, each class's first task's.
  w.put<std::uint64_t>(classes.choices.size());
  for (const auto& [task, c] : classes.choices) {
    w.put<std::uint64_t>(task);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.algorithm));
    w.put<std::int32_t>(c.channels);
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.fidelity));
    w.put<std::uint8_t>(static_cast<std::uint8_t>(c.representation));
  }
  w.put(kEndMark);
}

}  // namespace

workloads::FingerprintHash run_archive_fingerprint_hash(std::uint32_t version) {
  return version >= kRunArchiveFoldVersion ? workloads::FingerprintHash::multiply_rotate
                                           : workloads::FingerprintHash::fnv1a;
}

void write_run_archive(std::ostream& out, const std::string& metadata_json, const workloads::TaskGraph& graph,
                       const Timeline& timeline, const FoldSummary& fold) {
  const Classes classes = classes_of(graph, timeline);
  const std::uint32_t version =
      classes.images != nullptr || fold.considered ? kRunArchiveFoldVersion : kRunArchiveWholeVersion;
  write_sealed(out, version, [&](CompressedStream& compressed) {
    write_body(compressed, version, metadata_json, graph, timeline, fold, classes);
  });
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
  std::uint32_t version = 0;
  const std::string body = run_archive_body(bytes, &version);
  return decode_run_archive_body(body, version);
}

std::string run_archive_body(std::string_view bytes, std::uint32_t* version_read) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    throw std::runtime_error("not a trainsim run archive (wrong magic bytes)");
  Reader r(bytes.substr(sizeof(kMagic)));
  const auto version = r.get<std::uint32_t>();
  if (!is_read(version))
    throw std::runtime_error(
        fmt::format("run archive format version {}, this trainsim reads {} to {}: run the scenario again",
                    version, kRunArchiveWholeVersion, kRunArchiveFoldVersion));
  constexpr std::size_t kHeader = sizeof(kMagic) + sizeof(std::uint32_t);
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
  if (version_read != nullptr)
    *version_read = version;
  return decompress_body(bytes.substr(kHeader, bytes.size() - kHeader - kTrailer), raw_bytes);
}

std::string seal_run_archive(std::string_view body, std::uint32_t version) {
  std::ostringstream out;
  write_sealed(out, version,
               [&](CompressedStream& compressed) { compressed.write(body.data(), body.size()); });
  return std::move(out).str();
}

namespace {

FoldSummary get_fold_summary(Reader& r) {
  FoldSummary f;
  const auto considered = r.get<std::uint8_t>();
  const auto folded = r.get<std::uint8_t>();
  check(considered <= 1 && folded <= 1, "fold summary out of range");
  f.considered = considered != 0;
  f.folded = folded != 0;
  f.replicas = r.get<std::int32_t>();
  f.simulated = r.get<std::int32_t>();
  f.class_size = r.get<std::int32_t>();
  f.folded_why = r.get_string();
  f.stopped = r.get_string();
  return f;
}

// A permutation stored by put_images, whose cycles must all have length m or 1.
PermutationPowers get_images(Reader& r, const char* what, int m) {
  std::vector<std::size_t> image(r.count(what, sizeof(std::uint32_t)));
  for (std::size_t x = 0; x < image.size(); ++x)
    image[x] = static_cast<std::uint32_t>(static_cast<std::uint32_t>(x) + r.get<std::uint32_t>());
  auto powers = PermutationPowers::of(image, m);
  if (!powers)
    throw std::runtime_error(
        fmt::format("the run archive is corrupt: its {} are not a rotation of order {}", what, m));
  return std::move(*powers);
}

// The fold's images as the run had them: each recorded route's images,
// slotted in the order of the route's first recorded flow (as the fold's
// expansion made them), every image route inside flow_links.
void check_and_slot_routes(FoldImages& images, const Timeline& tl) {
  const auto m = static_cast<std::size_t>(images.order);
  images.route_slot.assign(tl.flow_links.size() + 1, FoldImages::kNoRoute);
  std::vector<std::uint32_t> slot_links;
  for (const FlowRecord& f : tl.flows.recorded()) {
    auto& slot = images.route_slot[f.first_link];
    if (slot != FoldImages::kNoRoute) {
      check(slot_links[slot] == f.link_count, "two link counts for one route");
      continue;
    }
    slot = static_cast<std::uint32_t>(slot_links.size());
    slot_links.push_back(f.link_count);
    check(
        slot_links.size() * m <= images.route_images.size() && images.route_images[slot * m] == f.first_link,
        "route images out of order");
    for (std::size_t k = 0; k < m; ++k)
      check(std::uint64_t(images.route_images[slot * m + k]) + f.link_count <= tl.flow_links.size(),
            "route image out of range");
  }
  check(slot_links.size() * m == images.route_images.size(), "route images without a flow");
}

}  // namespace

RunArchive decode_run_archive_body(std::string_view body, std::uint32_t version) {
  if (!is_read(version))
    throw std::runtime_error(fmt::format("run archive format version {} is not read", version));
  Reader r(body);
  RunArchive a;
  a.metadata_json = r.get_string();

  a.gpu_count = r.get<std::int32_t>();
  check(a.gpu_count >= 0, "negative GPU count");
  a.task_count = r.get<std::uint64_t>();
  a.graph_fingerprint = r.get<std::uint64_t>();
  a.fingerprint_hash = run_archive_fingerprint_hash(version);
  const std::uint64_t tasks = a.task_count;
  const int gpus = a.gpu_count;

  // Versions 7 to 9: the fold's summary, then its images when stored by class.
  std::optional<FoldImages> images;
  if (version != kRunArchiveWholeVersion) {
    a.fold = get_fold_summary(r);
    const auto m = r.get<std::int32_t>();
    check(m >= 1 && m < 0xffff, "fold order out of range");
    if (m > 1) {
      images.emplace();
      images->order = m;
      images->tasks = get_images(r, "task images", m);
      check(images->tasks.size() == tasks, "task images of another graph");
      images->endpoints = get_images(r, "endpoint images", m);
      check(images->endpoints.size() >= static_cast<std::size_t>(gpus), "too few endpoint images");
      for (std::size_t g = 0; g < static_cast<std::size_t>(gpus); ++g)
        check(images->endpoints.power(g, 1) < static_cast<std::uint32_t>(gpus), "a GPU's image is no GPU");
      images->route_images.resize(r.count("route images", sizeof(std::uint32_t)));
      for (auto& route : images->route_images)
        route = r.get<std::uint32_t>();
    }
  }

  auto& tl = a.timeline;
  const bool coded_records = records_coded(version);
  tl.records.recorded().resize(r.count("records", coded_records ? RecordRows::kMinBytes : 29));
  RecordRows record_coder;
  for (auto& rec : tl.records.recorded()) {
    if (coded_records) {
      rec = get_record(record_coder, r);
      check(rec.task < tasks && rec.gpu >= 0 && rec.gpu < gpus, "record out of range");
      continue;
    }
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
  const bool coded = flows_coded(version);
  tl.flows.recorded().resize(r.count("flows", coded ? FlowRows::kMinBytes : 48));
  FlowRows coder;
  for (auto& f : tl.flows.recorded()) {
    if (coded) {
      f = get_flow(coder, r);
    } else {
      f.task = r.get<std::uint64_t>();
      f.src_gpu = r.get<std::int32_t>();
      f.dst_gpu = r.get<std::int32_t>();
      f.bytes = r.get<double>();
      f.start_s = r.get<double>();
      f.end_s = r.get<double>();
      f.first_link = r.get<std::uint32_t>();
      f.link_count = r.get<std::uint32_t>();
    }
    check(f.task < tasks && f.src_gpu >= 0 && f.src_gpu < gpus && f.dst_gpu >= 0 && f.dst_gpu < gpus,
          "flow out of range");
  }
  tl.flow_links.resize(r.count("route entries", 4));
  for (auto& l : tl.flow_links) {
    l = r.get<std::uint32_t>();
    check(l < tl.links.size(), "route names an unknown link");
  }
  for (const auto& f : tl.flows.recorded())
    check(std::uint64_t(f.first_link) + f.link_count <= tl.flow_links.size(), "flow route out of range");
  tl.gpu_energy_J.resize(r.count("energy figures", 8));
  for (auto& j : tl.gpu_energy_J)
    j = r.get<double>();
  const std::size_t choices = r.count("collective choices", 14);
  if (images)
    tl.collectives.reserve(std::min(choices * static_cast<std::size_t>(images->order), images->tasks.size()));
  std::uint64_t previous = 0;
  for (std::size_t i = 0; i < choices; ++i) {
    const auto task = r.get<std::uint64_t>();
    // By class, each class once: in increasing task order, as written.
    check(!images || i == 0 || task > previous, "collective choices out of order");
    previous = task;
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
    // By class: the class's first task stands for its images.
    if (images && !images->tasks.fixed(task)) {
      check(images->tasks.first(task) == task, "a collective choice of a class stored under another task");
      for (int k = 1; k < images->order; ++k)
        tl.collectives.emplace(images->tasks.power(task, k), c);
    }
  }
  check(r.get<std::uint32_t>() == kEndMark, "missing end mark");
  check(r.left() == 0, "bytes after the end mark");
  if (images) {
    check_and_slot_routes(*images, tl);
    auto shared = std::make_shared<const FoldImages>(std::move(*images));
    tl.records.expand(shared);
    tl.flows.expand(shared);
  }
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
