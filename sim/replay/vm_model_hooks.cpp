#include "sim/replay/vm_model_hooks.hpp"

#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/VirtualMachine.hpp>
#include <xbt/signal.hpp>

#include <algorithm>

namespace trainsim::sim {
namespace {

using CompletionSignal = simgrid::xbt::signal<void(const simgrid::s4u::Activity&)>;
using ExecStartSignal = simgrid::xbt::signal<void(const simgrid::s4u::Exec&)>;

// SimGrid 3.32 keeps both signals private (only connecting is public). An
// explicit instantiation may name a private member (the standard's
// [temp.spec]: access is not checked in one), and the friend function it
// defines hands out its address.
struct CompletionSignalTag {
  friend CompletionSignal* signal_of(CompletionSignalTag);
};
struct ExecStartSignalTag {
  friend ExecStartSignal* signal_of(ExecStartSignalTag);
};
template <typename Tag, auto* Signal>
struct SignalAddress {
  friend decltype(Signal) signal_of(Tag) { return Signal; }
};
template struct SignalAddress<CompletionSignalTag, &simgrid::s4u::Activity::on_completion>;
template struct SignalAddress<ExecStartSignalTag, &simgrid::s4u::Exec::on_start>;

}  // namespace

bool unhook_vm_model_from_activities() {
  CompletionSignal& completion = *signal_of(CompletionSignalTag{});
  ExecStartSignal& exec_start = *signal_of(ExecStartSignalTag{});
  // VMModel's constructor connects one slot to each; tracing (instr) and
  // every plugin that hooks them connect a slot to Exec::on_start too.
  if (completion.get_slot_count() != 1 || exec_start.get_slot_count() != 1)
    return false;
  const auto hosts = simgrid::s4u::Engine::get_instance()->get_all_hosts();
  if (std::any_of(hosts.begin(), hosts.end(), [](simgrid::s4u::Host* host) {
        return dynamic_cast<simgrid::s4u::VirtualMachine*>(host) != nullptr;
      }))
    return false;
  completion.disconnect_slots();
  exec_start.disconnect_slots();
  return true;
}

}  // namespace trainsim::sim
