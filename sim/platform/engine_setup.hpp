#pragma once
// The process's SimGrid engine, configured for GPU fabrics.
#include <simgrid/s4u/Engine.hpp>

#include <memory>

namespace trainsim::sim {

// SimGrid's default network model (LV08) scales latency by 13.01 and
// bandwidth by 0.97, adds reverse-path cross-traffic and caps each flow by a
// TCP window: right for wide-area TCP, wrong for NVLink and InfiniBand. We use
// CM02 (plain max-min sharing, no factors), no cross-traffic and an unbounded
// window, so a flow of S bytes on an idle link of bandwidth B and latency L
// takes exactly L + S/B (checked by tests/unit/sim). SimGrid's own log lines
// below warning level are silenced. One engine per process.
std::unique_ptr<simgrid::s4u::Engine> make_engine();

}  // namespace trainsim::sim
