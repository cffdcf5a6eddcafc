#pragma once
// What a results column (a flattened summary.json key, a swept parameter)
// means to a person: a label, the kind of quantity, and how its values and
// axes read. The study plots, the sweep page and `compare` all go through
// here, and through platforms/number_format for the numbers themselves.
#include <string>

#include <nlohmann/json.hpp>

namespace trainsim::analysis {

enum class FigureKind {
  fraction,    // 0.4016 reads "40.2%" (`*_fraction`, mfu, hfu, utilization, shares)
  duration,    // seconds (`*_s`)
  bytes,       // `*_bytes`
  bandwidth,   // bytes per second (`*_Bps`)
  energy,      // joules (`*_J`)
  power,       // watts (`*_W`)
  rate,        // something per something (`tokens_per_s`, `tokens_per_J`)
  identifier,  // a GPU, stage, seed or point number: no ratio, no prefix
  number,      // anything else: counts as integers, other numbers plainly
};

struct FigureMeaning {
  std::string label;  // "iteration time", "MFU", "tokens/s per GPU", "tensor parallel (tp)"
  FigureKind kind = FigureKind::number;
  std::string unit;  // of a rate: "tokens/s"; else ""
};

// The last dotted part of a column: "summary.mfu" -> "mfu", "plan.tp" -> "tp".
std::string last_component(const std::string& column);

FigureMeaning figure_meaning(const std::string& column);

// The value a column stands for where a point's summary leaves it out, for
// the summary keys written only when they differ from their default
// (`plan.precision`: summary.json names it for FP8 plans only, so that BF16
// outputs keep their bytes; its absence means "bf16"); null for any other.
nlohmann::ordered_json value_when_absent(const std::string& column);

// A value of the column for people: "815ms", "40.2%", "14.7GiB", "161k tokens/s", "3", "gpu 12".
std::string format_figure(const std::string& column, double value);

// An axis of a plot of the column: its label with the unit the ticks are in,
// and the factor that turns values into tick numbers ("MFU (%)", 100;
// "iteration time (ms)", 1e3; "peak memory (GiB)", 2^-30), for values up to
// `largest` in magnitude.
struct AxisUnit {
  std::string label;
  double scale = 1;
};
AxisUnit axis_unit(const std::string& column, double largest);

}  // namespace trainsim::analysis
