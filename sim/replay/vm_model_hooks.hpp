#pragma once
// SimGrid 3.32's virtual-machine model (VMModel, built with every engine)
// hooks two signals that fire for every activity of the replay: an
// execution's start (Exec::on_start: is its host a VM?) and every activity's
// completion (Activity::on_completion: is it an execution on a VM?). Each
// answer is a failing dynamic_cast: 1.5-1.8% of scale-16k's user-time
// samples, 0.11e9 instructions (docs/performance.md). Without a virtual
// machine neither callback does anything.

namespace trainsim::sim {

// Disconnects the VM model's two callbacks, when they are all that those
// signals hold (tracing and SimGrid's plugins connect more: nothing is
// disconnected then) and no host of the engine is a virtual machine
// (trainsim creates none). Returns whether it did. The callbacks are
// SimGrid's own functions and cannot be connected again: call it once the
// platform is built, for the process's one replay.
bool unhook_vm_model_from_activities();

}  // namespace trainsim::sim
