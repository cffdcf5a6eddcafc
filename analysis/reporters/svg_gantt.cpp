// The pipeline Gantt chart of one iteration: GPUs down, time across. Each row
// is one GPU: its compute ops as boxes coloured by kind (critical-path ops
// outlined), its communication as a thin strip under them, and the light
// grey background left showing wherever the GPU did nothing (the bubbles).
//
// It scales: GPUs whose timelines are identical (data-parallel replicas,
// the tensor-parallel ranks of a stage) share one row that says how many it
// stands for; boxes narrower than half a pixel merge with their neighbours of
// the same colour; the time axis is drawn above the rows as well as below,
// so it is on screen whatever the height; the legend lists only the kinds
// that occur.
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <ostream>
#include <set>
#include <tuple>

#include "analysis/images_alike.hpp"
#include "analysis/record_prefetch.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/svg_style.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

// One drawn box, before merging.
struct Box {
  double start_s;
  double end_s;
  std::string_view colour;
  workloads::TaskId task;
  bool on_path;
};

// A row: the GPUs it stands for (identical timelines) and its two lanes.
struct Row {
  std::vector<int> gpus;
  std::vector<Box> compute;
  std::vector<Box> comm;
};

// A 64-bit mix (splitmix64's finaliser): spreads the bits of each box's
// description before they are summed.
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Times to the nanosecond (the trace's resolution): replicas whose times
// differ by rounding in the last bits of a double still fold.
std::uint64_t bits(double seconds) {
  return static_cast<std::uint64_t>(std::llround(seconds * 1e9));
}

// What a GPU's row shows, as a number: the sum of a hash of every box (lane,
// times to the nanosecond, kind, micro-batch, chunk), so that the order the replay recorded
// them in does not matter and nothing is stored per box. GPUs of a stage
// with equal fingerprints draw the same row.
std::uint64_t box_hash(bool compute, double start, double end, const workloads::Task& task) {
  std::uint64_t h = mix(bits(start) ^ 0x9e3779b97f4a7c15ULL);
  h = mix(h ^ bits(end));
  h = mix(h ^ (static_cast<std::uint64_t>(task.kind) << 1 | (compute ? 1 : 0)));
  h = mix(h ^ (static_cast<std::uint64_t>(task.comm) << 32 | static_cast<std::uint32_t>(task.micro_batch)));
  return mix(h ^ static_cast<std::uint64_t>(task.chunk));
}

std::vector<Row> gantt_rows(const RunContext& run, const Timeline& timeline,
                            const std::set<workloads::TaskId>& critical) {
  const auto gpus = static_cast<std::size_t>(std::max(run.graph.gpu_count, 0));
  // Pass 1: each GPU's fingerprint.
  std::vector<std::uint64_t> fingerprint(gpus, 0);
  std::vector<std::size_t> boxes(gpus, 0);
  auto note = [&](int g, std::uint64_t hash) {
    if (g < 0 || static_cast<std::size_t>(g) >= gpus)
      return;
    fingerprint[static_cast<std::size_t>(g)] += hash;
    ++boxes[static_cast<std::size_t>(g)];
  };
  // A folded timeline class by class: an image's boxes hash as its
  // record's when its task has the fields hashed (its times and stream are
  // the record's).
  // class_alike: whether every image of a class was alike (its task of its
  // record's kind, comm, micro-batch and chunk); pass 2 then reads an
  // image's task only where its box could be drawn. A record the run found
  // with alike images (Timeline::images_alike: the row fields, a superset
  // of those, and the peers' images) is, without reading its images' tasks.
  const auto& records = timeline.records;
  std::vector<char> class_alike(records.recorded().size(), 1);
  const RecordPrefetch prefetch(run.graph, records);
  for (std::size_t i = 0; i < records.recorded().size(); ++i) {
    prefetch.ahead_of(i);
    const TaskRecord& first = records.recorded()[i];
    const auto& first_task = run.graph[first.task];
    const bool compute = first.stream == Stream::compute;
    const std::uint64_t hash = box_hash(compute, first.start_s, first.end_s, first_task);
    // An alike image is a send only when its record's task is one.
    const std::uint64_t peer_hash = first_task.kind == workloads::TaskKind::send
                                        ? box_hash(false, first.start_s, first.end_s, first_task)
                                        : 0;
    const int n = records.images_of(first);
    if (n > 1 && timeline.images_alike(i)) {
      const bool sends = first_task.kind == workloads::TaskKind::send && first_task.peer >= 0;
      for (int k = 0; k < n; ++k) {
        note(records.image(first, k).gpu, hash);
        if (sends)
          note(image_peer(first_task.peer, k, run.graph.gpu_count, *records.fold_images()), peer_hash);
      }
      continue;
    }
    for (int k = 0; k < n; ++k) {
      const TaskRecord r = records.image(first, k);
      const auto& task = run.graph[r.task];
      const bool alike = task.kind == first_task.kind && task.comm == first_task.comm &&
                         task.micro_batch == first_task.micro_batch && task.chunk == first_task.chunk;
      class_alike[i] = class_alike[i] && alike;
      note(r.gpu, alike ? hash : box_hash(r.stream == Stream::compute, r.start_s, r.end_s, task));
      if (task.kind == workloads::TaskKind::send && task.peer >= 0)
        note(task.peer, alike ? peer_hash : box_hash(false, r.start_s, r.end_s, task));
    }
  }
  // Identical fingerprints in the same stage fold into the first GPU's row.
  std::vector<Row> rows;
  std::vector<int> row_of(gpus, -1);
  std::map<std::tuple<int, std::uint64_t, std::size_t>, std::size_t> seen;
  for (std::size_t g = 0; g < gpus; ++g) {
    const auto key = std::make_tuple(run.plan.pp_rank_of(static_cast<int>(g)), fingerprint[g], boxes[g]);
    auto [it, fresh] = seen.emplace(key, rows.size());
    if (fresh) {
      rows.push_back(Row{{static_cast<int>(g)}, {}, {}});
      row_of[g] = static_cast<int>(it->second);
    } else {
      rows[it->second].gpus.push_back(static_cast<int>(g));
    }
  }
  // Pass 2: the boxes of each row's first GPU (the rows drawn only).
  const auto drawn = [&](int g) {
    return g >= 0 && static_cast<std::size_t>(g) < gpus && row_of[static_cast<std::size_t>(g)] >= 0 &&
           row_of[static_cast<std::size_t>(g)] < kGanttMaxRows;
  };
  auto add = [&](int g, const TaskRecord& r, bool compute, const workloads::Task& task) {
    if (!drawn(g))
      return;
    auto& row = rows[static_cast<std::size_t>(row_of[static_cast<std::size_t>(g)])];
    const bool on_path = compute && critical.count(r.task) > 0;
    (compute ? row.compute : row.comm).push_back({r.start_s, r.end_s, svg::colour_of(task), r.task, on_path});
  };
  // The full list's records in its order (class by class), skipping those
  // `add` would drop without reading their tasks: an image that lands on a
  // GPU not drawn and is no send. An image is no send when its record's
  // task is of another kind and pass 1 found the class alike (every image's
  // task of its record's kind); otherwise its task is read.
  const auto is_send = [](const workloads::Task& task) {
    return task.kind == workloads::TaskKind::send && task.peer >= 0;
  };
  // An image of a record with alike images draws as its record's task (its
  // colour is of the row fields' kind and comm), to its peer's image.
  for (std::size_t i = 0; i < records.recorded().size(); ++i) {
    prefetch.ahead_of(i);
    const TaskRecord& first = records.recorded()[i];
    const auto& first_task = run.graph[first.task];
    const bool sends = !class_alike[i] || first_task.kind == workloads::TaskKind::send;
    const int n = records.images_of(first);
    const bool known_alike = n > 1 && timeline.images_alike(i);
    for (int k = 0; k < n; ++k) {
      const TaskRecord r = records.image(first, k);
      if (!sends && !drawn(r.gpu))
        continue;
      const auto& task = known_alike ? first_task : run.graph[r.task];
      add(r.gpu, r, r.stream == Stream::compute, task);
      if (is_send(task))
        add(known_alike ? image_peer(task.peer, k, run.graph.gpu_count, *records.fold_images()) : task.peer,
            r, false, task);
    }
  }
  return rows;
}

// Boxes of one lane, merged where they are too thin to see apart: a box
// narrower than `min_s` joins the previous one when it has the same colour
// and starts within `min_s` of its end. Returns the boxes to draw and, for
// each, how many ops it stands for.
std::vector<std::pair<Box, int>> merged(std::vector<Box> boxes, double min_s) {
  std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) { return a.start_s < b.start_s; });
  std::vector<std::pair<Box, int>> out;
  for (const auto& b : boxes) {
    if (!out.empty()) {
      auto& [last, count] = out.back();
      const bool thin = b.end_s - b.start_s < min_s || last.end_s - last.start_s < min_s;
      if (thin && b.colour == last.colour && b.start_s - last.end_s < min_s && !b.on_path && !last.on_path) {
        last.end_s = std::max(last.end_s, b.end_s);
        ++count;
        continue;
      }
    }
    out.emplace_back(b, 1);
  }
  return out;
}

std::string row_label(const RunContext& run, const Row& row) {
  const int g = row.gpus.front();
  if (row.gpus.size() == 1)
    return fmt::format("GPU {} \u00b7 stage {}", g, run.plan.pp_rank_of(g));
  return fmt::format("GPU {} \u00b7 stage {} \u00b7 \u00d7{}", g, run.plan.pp_rank_of(g), row.gpus.size());
}

std::string gpu_list(const std::vector<int>& gpus) {
  std::string out;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    if (i == 24) {
      out += fmt::format(", ... ({} more)", gpus.size() - i);
      break;
    }
    out += fmt::format("{}{}", i ? ", " : "", gpus[i]);
  }
  return out;
}

}  // namespace

void write_gantt_svg(std::ostream& out, const RunContext& run, const Timeline& timeline,
                     const Report& report) {
  std::set<workloads::TaskId> critical;
  for (const auto& seg : report.critical_path.segments)
    if (seg.is_task)
      critical.insert(seg.task);
  std::vector<Row> rows = gantt_rows(run, timeline, critical);
  const std::size_t all_rows = rows.size();
  if (rows.size() > static_cast<std::size_t>(kGanttMaxRows))
    rows.resize(static_cast<std::size_t>(kGanttMaxRows));

  const double t = std::max(timeline.end_s, 1e-12);
  constexpr double left = 190, right = 30, legend_y = 50, axis_top = 96, top = 104, row_h = 26, box_h = 17,
                   strip_h = 5, bottom = 46;
  constexpr double plot_w = 1100;
  const double height = top + row_h * static_cast<double>(rows.size()) + bottom;
  const double width = left + plot_w + right;
  auto x = [&](double s) { return left + plot_w * s / t; };
  // Half a pixel of time: thinner boxes merge with their neighbours.
  const double min_s = 0.5 * t / plot_w;

  out << svg::open_document(width, height,
                            fmt::format("{}: one training iteration per GPU", run.scenario_name));
  std::string shown;
  if (rows.size() < all_rows)
    shown = fmt::format(" {} of {} rows shown.", rows.size(), all_rows);
  const std::size_t gpus_drawn = [&] {
    std::size_t n = 0;
    for (const auto& r : rows)
      n += r.gpus.size();
    return n;
  }();
  std::string folded;
  if (all_rows < static_cast<std::size_t>(run.graph.gpu_count))
    folded =
        fmt::format(" {} GPUs in {} rows: \u00d7N marks a row standing for N GPUs with identical timelines.",
                    gpus_drawn, rows.size());
  fmt::print(
      out,
      "<text x=\"12\" y=\"40\" fill=\"#444\">iteration {}, MFU {}, bubble (idle) {}, lost time {}. "
      "Outlined: critical path.{}{}</text>\n",
      svg::escape(units::format_duration(timeline.end_s)), units::format_percent(report.summary.mfu),
      units::format_percent(report.summary.bubble_fraction),
      units::format_percent(report.bubbles.total_lost_s /
                            (t * static_cast<double>(std::max<std::size_t>(1, report.bubbles.gpus.size())))),
      svg::escape(folded), svg::escape(shown));

  // Legend: the kinds that occur, and idle.
  std::set<std::string_view> used;
  for (const auto& r : rows) {
    for (const auto& b : r.compute)
      used.insert(b.colour);
    for (const auto& b : r.comm)
      used.insert(b.colour);
  }
  double lx = 12;
  for (const auto& [label, colour] : svg::gantt_legend()) {
    if (used.count(colour) == 0 && label != "idle (bubble)")
      continue;
    fmt::print(
        out,
        "<g class=\"legend-entry\"><rect x=\"{:.1f}\" y=\"{:.0f}\" width=\"12\" height=\"12\" fill=\"{}\" "
        "stroke=\"#999\" stroke-width=\"0.5\"/><text x=\"{:.1f}\" y=\"{:.0f}\">{}</text></g>\n",
        lx, legend_y, colour, lx + 16, legend_y + 10, svg::escape(label));
    lx += 28 + 7.0 * static_cast<double>(label.size());
  }

  // The time axis, above the rows (on screen however many rows follow) and below them.
  auto axis = [&](double y, bool labels_above) {
    fmt::print(out,
               "<g class=\"time-axis\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" "
               "stroke=\"#333\"/>\n",
               left, y, left + plot_w, y);
    for (double tick : svg::ticks(timeline.end_s, 10)) {
      if (tick > timeline.end_s * (1 + 1e-9))
        break;
      fmt::print(out,
                 "<line x1=\"{0:.2f}\" y1=\"{1:.1f}\" x2=\"{0:.2f}\" y2=\"{2:.1f}\" stroke=\"#333\"/><text "
                 "x=\"{0:.2f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                 x(tick), y, labels_above ? y - 4 : y + 5, labels_above ? y - 7 : y + 18,
                 svg::escape(svg::time_label(tick, timeline.end_s)));
    }
    out << "</g>\n";
  };
  axis(axis_top, true);

  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    const double y = top + row_h * static_cast<double>(i);
    fmt::print(out, "<g class=\"gpu-row\" data-gpu=\"{}\" data-gpus=\"{}\">\n", row.gpus.front(),
               row.gpus.size());
    fmt::print(out,
               "<rect class=\"bar\" x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" "
               "fill=\"#f4f4f4\"/>\n",
               left, y, plot_w, box_h + strip_h);
    fmt::print(out, "<text x=\"{:.1f}\" y=\"{:.2f}\" text-anchor=\"end\">{}", left - 8, y + box_h - 4,
               svg::escape(row_label(run, row)));
    if (row.gpus.size() > 1)
      fmt::print(out, "<title>{} GPUs with this exact timeline: {}</title>", row.gpus.size(),
                 gpu_list(row.gpus));
    out << "</text>\n";
    for (const bool compute : {true, false}) {
      for (const auto& [b, count] : merged(compute ? row.compute : row.comm, min_s)) {
        const double by = y + (compute ? 0 : box_h);
        const double w = std::max(x(b.end_s) - x(b.start_s), 0.3);
        fmt::print(out, "<rect x=\"{:.2f}\" y=\"{:.2f}\" width=\"{:.2f}\" height=\"{:.2f}\" fill=\"{}\"{}>",
                   x(b.start_s), by, w, compute ? box_h : strip_h, b.colour,
                   b.on_path ? " stroke=\"#111\" stroke-width=\"1\"" : "");
        const std::string what =
            count > 1 ? fmt::format("{} ops from {}", count, workloads::task_label(run.graph, b.task))
                      : workloads::task_label(run.graph, b.task);
        fmt::print(out, "<title>{}: {} ({} to {})</title></rect>\n", svg::escape(row_label(run, row)),
                   svg::escape(what), svg::escape(svg::time_label(b.start_s, t)),
                   svg::escape(svg::time_label(b.end_s, t)));
      }
    }
    fmt::print(out, "</g>\n");
  }
  axis(top + row_h * static_cast<double>(rows.size()) + 4, false);
  out << "</svg>\n";
}

}  // namespace trainsim::analysis
