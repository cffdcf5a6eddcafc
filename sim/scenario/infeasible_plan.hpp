#pragma once
// A scenario that is well formed but cannot run as planned: its parallel plan
// does not divide the cluster, the model or the batch, or (memory model) does
// not fit in GPU memory. For `trainsim run` it is bad input like any other
// (exit status 1, every problem listed); a sweep drops such a point and
// records the reason instead of failing the whole study.
//
// Hook for checks to come: a rule that makes a plan infeasible throws
// InfeasiblePlan with its reason from the loader's validation step (see
// load_document in scenario_loader.cpp), before SimGrid ever runs. The memory
// model's "does not fit" check belongs there with
// Infeasibility::does_not_fit_in_memory.
#include <string>
#include <string_view>
#include <vector>

#include "platforms/input_error.hpp"

namespace trainsim::scenario {

enum class Infeasibility {
  invalid_plan,            // a cross-field plan rule fails (does not divide, ...)
  does_not_fit_in_memory,  // the memory model's peak exceeds a GPU's capacity
};

// "invalid_plan", "does_not_fit_in_memory": the words written in results.
inline std::string_view to_string(Infeasibility reason) {
  switch (reason) {
    case Infeasibility::invalid_plan:
      return "invalid_plan";
    case Infeasibility::does_not_fit_in_memory:
      return "does_not_fit_in_memory";
  }
  return "invalid_plan";
}

class InfeasiblePlan : public platforms::InputError {
 public:
  InfeasiblePlan(Infeasibility reason, std::vector<std::string> problems)
      : platforms::InputError(std::move(problems)), reason_(reason) {}
  Infeasibility reason() const { return reason_; }

 private:
  Infeasibility reason_;
};

}  // namespace trainsim::scenario
