#include "analysis/memory_curve.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include "analysis/content_hash.hpp"
#include "analysis/fold_classes.hpp"

namespace trainsim::analysis {

namespace {

using workloads::MemoryEvent;

constexpr double kNever = std::numeric_limits<double>::quiet_NaN();

struct Change {
  double time_s;
  double bytes;
  workloads::MemoryKind kind;
};

// Beside content_hash.hpp's overloads (for numbers and interval lists), not
// hiding them.
using analysis::same_bits;

bool same_bits(const workloads::MemoryBreakdown& a, const workloads::MemoryBreakdown& b) {
  for (int k = 0; k < workloads::kMemoryKindCount; ++k)
    if (!same_bits(a.bytes[k], b.bytes[k]))
      return false;
  return true;
}

// One GPU's curve from its changes, in the graph's order (sorted here by
// time, frees first at one instant, the graph's order otherwise).
void fill_curve(GpuMemoryCurve& c, std::vector<Change>& list) {
  const auto before = [](const Change& a, const Change& b) {
    if (a.time_s != b.time_s)
      return a.time_s < b.time_s;
    return a.bytes < 0 && b.bytes >= 0;
  };
  // A stable sort leaves a list in order as it is: checked in one pass.
  if (!std::is_sorted(list.begin(), list.end(), before))
    std::stable_sort(list.begin(), list.end(), before);
  auto points = std::make_shared<std::vector<MemoryCurvePoint>>();
  workloads::MemoryBreakdown current = c.resident;
  c.peak_bytes = current.total();
  c.at_peak = current;
  points->push_back({0, c.peak_bytes});
  for (const Change& change : list) {
    current[change.kind] += change.bytes;
    const double total = current.total();
    if (total > c.peak_bytes) {
      c.peak_bytes = total;
      c.peak_time_s = change.time_s;
      c.at_peak = current;
    }
    if (points->back().time_s == change.time_s)
      points->back().bytes = total;
    else
      points->push_back({change.time_s, total});
  }
  points->shrink_to_fit();
  c.curve = std::move(points);
}

// Dense slots 0, 1, ... for 32-bit keys (task ids), in one array: open
// addressing over a power-of-2 table of (key, slot), a key's place found by
// a multiply. The memory curves look up every recorded record's cycle here;
// std::unordered_map allocated a node per key and read the bucket array
// and then the node for each lookup (its hashing, nodes and lookups were
// most of the curves' time on a folded 16k-GPU run).
class SlotTable {
 public:
  static constexpr std::uint32_t kAbsent = std::numeric_limits<std::uint32_t>::max();

  std::size_t size() const { return used_; }
  // The key's slot, a new one (the next number) when it has none.
  std::uint32_t insert(std::uint32_t key) {
    if (2 * (used_ + 1) > table_.size())
      grow();
    Entry& e = table_[place(key)];
    if (e.key != kAbsent)
      return e.slot;
    e = {key, static_cast<std::uint32_t>(used_++)};
    return e.slot;
  }
  std::uint32_t find(std::uint32_t key) const { return table_.empty() ? kAbsent : table_[place(key)].slot; }

 private:
  struct Entry {
    std::uint32_t key = kAbsent;  // kAbsent: empty (task ids are below it)
    std::uint32_t slot = kAbsent;
  };
  // Where `key` is, or the empty entry where it would go.
  std::size_t place(std::uint32_t key) const {
    const std::size_t mask = table_.size() - 1;
    std::size_t i = (static_cast<std::uint64_t>(key) * 0x9e3779b97f4a7c15ULL) >> shift_;
    while (table_[i].key != key && table_[i].key != kAbsent)
      i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Entry> old = std::move(table_);
    table_.assign(old.empty() ? 1024 : 2 * old.size(), Entry{});
    shift_ = 64 - std::countr_zero(table_.size());
    for (const Entry& e : old)
      if (e.key != kAbsent)
        table_[place(e.key)] = e;
  }

  std::vector<Entry> table_;
  int shift_ = 64;
  std::size_t used_ = 0;
};

void track_peak(MemoryCurves& curves, const GpuMemoryCurve& c) {
  if (curves.peak_gpu < 0 || c.peak_bytes > curves.peak_bytes) {
    curves.peak_bytes = c.peak_bytes;
    curves.peak_gpu = c.gpu;
  }
}

// Every GPU on its own.
MemoryCurves every_gpu(const workloads::TaskGraph& graph, const Timeline& timeline) {
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  // When each task ran (a collective's records share one start and end).
  std::vector<double> start(graph.size(), kNever), end(graph.size(), kNever);
  for (const auto& r : timeline.records) {
    start[r.task] = r.start_s;
    end[r.task] = r.end_s;
  }
  std::vector<std::vector<Change>> changes(gpus);
  for (const MemoryEvent& e : graph.memory) {
    const double t = e.at == MemoryEvent::At::start ? start[e.task] : end[e.task];
    if (t != t || e.gpu < 0 || static_cast<std::size_t>(e.gpu) >= gpus)
      continue;  // a task that did not run (a partial timeline)
    changes[static_cast<std::size_t>(e.gpu)].push_back({t, e.bytes, e.kind});
  }
  MemoryCurves curves;
  curves.gpus.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& c = curves.gpus[g];
    c.gpu = static_cast<int>(g);
    if (g < graph.resident_memory.size())
      c.resident = graph.resident_memory[g];
    fill_curve(c, changes[g]);
    std::vector<Change>().swap(changes[g]);
    track_peak(curves, c);
  }
  return curves;
}

// Once per GPU orbit of a folded run; nullopt when an image GPU's events or
// resident memory are not its representative's under the rotation.
std::optional<MemoryCurves> per_orbit(const workloads::TaskGraph& graph, const Timeline& timeline,
                                      const GpuClasses& classes) {
  const FoldImages* images = classes.images();
  const auto gpus = classes.size();
  const auto& events = graph.memory;
  if (images == nullptr || events.size() >= std::numeric_limits<std::uint32_t>::max() ||
      images->tasks.size() < graph.size())
    return std::nullopt;
  const auto gpu_of = [&](const MemoryEvent& e) {
    return e.gpu >= 0 && static_cast<std::size_t>(e.gpu) < gpus ? static_cast<std::size_t>(e.gpu) : gpus;
  };
  // Each representative's events, as positions in graph.memory, in order:
  // GPU g's from mine_begin[g] to mine_begin[g + 1] of `mine` (counted,
  // then filed: one array, not a vector per GPU).
  std::vector<std::uint32_t> mine_begin(gpus + 1, 0);
  for (const MemoryEvent& e : events) {
    if (e.task >= graph.size())
      return std::nullopt;
    const auto g = gpu_of(e);
    if (g < gpus && classes.is_representative(g))
      ++mine_begin[g + 1];
  }
  for (std::size_t g = 1; g <= gpus; ++g)
    mine_begin[g] += mine_begin[g - 1];
  std::vector<std::uint32_t> mine(mine_begin.back());
  {
    std::vector<std::uint32_t> next(mine_begin.begin(), mine_begin.end() - 1);
    for (std::size_t i = 0; i < events.size(); ++i) {
      const auto g = gpu_of(events[i]);
      if (g < gpus && classes.is_representative(g))
        mine[next[g]++] = static_cast<std::uint32_t>(i);
    }
  }
  const auto mine_of = [&](std::size_t g) {
    return std::span<const std::uint32_t>(mine.data() + mine_begin[g], mine.data() + mine_begin[g + 1]);
  };
  // An image GPU's events are its representative's, in the same order, each
  // on the image (under the GPU's power of the rotation) of the
  // representative's task, at the same end of it, of the same kind and bytes.
  std::vector<std::uint32_t> seen(gpus, 0);
  for (const MemoryEvent& e : events) {
    const auto g = gpu_of(e);
    if (g >= gpus || classes.is_representative(g))
      continue;
    const auto list = mine_of(classes.representative(g));
    auto& j = seen[g];
    if (j >= list.size())
      return std::nullopt;
    const MemoryEvent& r = events[list[j++]];
    if (r.at != e.at || r.kind != e.kind || !same_bits(r.bytes, e.bytes) ||
        images->tasks.power(r.task, classes.step(g)) != e.task)
      return std::nullopt;
  }
  const auto resident = [&](std::size_t g) -> const workloads::MemoryBreakdown* {
    return g < graph.resident_memory.size() ? &graph.resident_memory[g] : nullptr;
  };
  for (std::size_t g = 0; g < gpus; ++g) {
    const auto rep = classes.representative(g);
    if (rep == g)
      continue;
    if (seen[g] != mine_begin[rep + 1] - mine_begin[rep])
      return std::nullopt;
    const auto *a = resident(g), *b = resident(rep);
    if ((a == nullptr) != (b == nullptr) || (a != nullptr && !same_bits(*a, *b)))
      return std::nullopt;
  }
  std::vector<std::uint32_t>().swap(seen);

  // When the representatives' events' tasks ran. The full list reads each
  // recorded record followed by its images (analysis/record_list.hpp), at
  // its times, on the tasks of its task's cycle under the rotation (a fixed
  // task, a spanning collective: its own records only); so every task of a
  // cycle has the times of the last recorded record in the cycle, as a walk
  // over the full list leaves them. Keyed by the cycle's first task.
  // (Hashed: the recorded records' lookups, most of them of tasks without
  // memory events, were the costliest part of the curves as binary searches.)
  SlotTable slot_of;
  for (const std::uint32_t i : mine)
    slot_of.insert(images->tasks.first(events[i].task));
  const std::size_t keys = slot_of.size();
  std::vector<double> start(keys, kNever), end(keys, kNever);
  // A collective's records (one per member) and a GPU's events on one task
  // come one after another: the last key found is asked again first.
  std::uint32_t last_key = std::numeric_limits<std::uint32_t>::max();
  std::size_t last_slot = keys;
  const auto slot = [&](std::uint32_t key) {
    if (key == last_key)
      return last_slot;
    const std::uint32_t found = slot_of.find(key);
    last_key = key;
    last_slot = found != SlotTable::kAbsent ? found : keys;
    return last_slot;
  };
  for (const auto& r : timeline.records.recorded()) {
    if (r.task >= graph.size())
      return std::nullopt;
    if (const auto s = slot(images->tasks.first(r.task)); s < keys) {
      start[s] = r.start_s;
      end[s] = r.end_s;
    }
  }

  MemoryCurves curves;
  curves.gpus.resize(gpus);
  std::vector<Change> list;
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& c = curves.gpus[g];
    if (const auto rep = classes.representative(g); rep != g) {
      c = curves.gpus[rep];  // the same curve, shared
      c.gpu = static_cast<int>(g);
      track_peak(curves, c);
      continue;
    }
    c.gpu = static_cast<int>(g);
    if (const auto* r = resident(g))
      c.resident = *r;
    list.clear();
    for (const std::uint32_t i : mine_of(g)) {
      const MemoryEvent& e = events[i];
      const auto s = slot(images->tasks.first(e.task));
      const double t = e.at == MemoryEvent::At::start ? start[s] : end[s];
      if (t != t)
        continue;  // a task that did not run (a partial timeline)
      list.push_back({t, e.bytes, e.kind});
    }
    fill_curve(c, list);
    track_peak(curves, c);
  }
  return curves;
}

}  // namespace

const std::vector<MemoryCurvePoint>& GpuMemoryCurve::points() const {
  static const std::vector<MemoryCurvePoint> kNone;
  return curve ? *curve : kNone;
}

MemoryCurves memory_curves(const workloads::TaskGraph& graph, const Timeline& timeline) {
  return memory_curves(graph, timeline,
                       GpuClasses::of(graph, timeline, static_cast<std::size_t>(graph.gpu_count)));
}

MemoryCurves memory_curves(const workloads::TaskGraph& graph, const Timeline& timeline,
                           const GpuClasses& classes) {
  if (classes.folded() && classes.size() == static_cast<std::size_t>(graph.gpu_count))
    if (auto curves = per_orbit(graph, timeline, classes))
      return std::move(*curves);
  return every_gpu(graph, timeline);
}

}  // namespace trainsim::analysis
