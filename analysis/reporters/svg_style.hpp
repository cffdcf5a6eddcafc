#pragma once
// Shared look of trainsim's SVG plots: colours per op kind and bubble cause,
// XML escaping, and "nice" axis ticks. The plots are plain SVG 1.1 with no
// script and no external resource, so they embed in HTML and open anywhere.
#include <string>
#include <string_view>
#include <vector>

#include "analysis/bubbles.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis::svg {

std::string escape(std::string_view text);
// Fill colour of a task's box (compute by kind, communication by kind).
std::string_view colour_of(const workloads::Task& task);
std::string_view colour_of(BubbleCause cause);
// Legend entries for the Gantt: (label, colour), every kind colour_of gives;
// the chart lists those that occur.
std::vector<std::pair<std::string, std::string>> gantt_legend();
// About `count` round tick values from 0 to the first at or above `max`.
std::vector<double> ticks(double max, int count);
// A tick label in the unit that suits the axis ("12 ms", "1.5 s", "3 GiB").
std::string time_label(double seconds, double axis_max_s);
std::string bytes_label(double bytes);
// The document prologue with the given size and a title.
std::string open_document(double width, double height, std::string_view title);

}  // namespace trainsim::analysis::svg
