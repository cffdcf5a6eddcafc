#pragma once
// What `trainsim plan` prints and writes: the ranked table of simulated
// plans, the reasons the winner wins, and plans.csv / plans.json with every
// candidate (estimate for all, simulated figures for the best K). Rows in,
// text out: the search and the simulations happen in sim/.
#include <array>
#include <cstddef>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trainsim::analysis {

inline constexpr const char* kPlansSchema = "trainsim.plans/1";

// Figures of one simulated plan, read from its summary.json.
struct SimulatedPlan {
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0;
  double peak_memory_bytes = 0;
  double bubble_fraction = 0;
  double exposed_comm_fraction = 0;
  double compute_fraction = 0;
  // The replay's verdict (summary.json's fits_in_memory): a GPU's replayed
  // peak above its HBM (capacity_bytes) although the static estimate that
  // admitted the plan said it fits. Such a plan is never the winner.
  bool fits_in_memory = true;
  double memory_capacity_bytes = 0;
};

struct PlanRow {
  std::string key;                                                 // plan_key: ties are broken by it
  std::string label;                                               // plan_label
  nlohmann::ordered_json plan = nlohmann::ordered_json::object();  // tp, pp, dp, ... as in a scenario
  int estimate_rank = 0;                                           // 1-based, by estimate
  double estimate_s = 0;
  double estimate_bubble_s = 0;
  double estimate_tp_comm_s = 0;
  double estimate_pp_comm_s = 0;
  double estimate_ep_comm_s = 0;  // expert all-to-alls that show (MoE with ep > 1)
  double estimate_dp_exposed_s = 0;
  double estimate_compute_s = 0;
  bool selected = false;  // among the K simulated
  std::optional<SimulatedPlan> simulated;
  std::string failure;  // why its simulation failed (selected, not simulated)
  std::string folder;   // where its run lives, relative to the output directory
};

struct PlanReport {
  nlohmann::ordered_json search = nlohmann::ordered_json::object();  // model, cluster, gpus, batch, ...
  std::size_t enumerated = 0;
  std::vector<std::pair<std::string, std::size_t>> pruned;  // reason word -> count, in reason order
  std::vector<std::pair<std::string, std::string>> pruned_descriptions;  // reason word -> text
  std::vector<PlanRow> rows;                                             // every feasible plan, by estimate
  std::vector<nlohmann::ordered_json> memory_pruned;                     // {key, plan, reason}
  // A MoE model's search: plans.csv has the expert_parallel and
  // estimate_ep_comm_s columns, plans.json the estimate's ep_comm_s (a
  // dense model's files keep their columns).
  bool expert_columns = false;
};

// The selected rows that simulated and fit in memory, fastest first (ties
// by key), then those whose replayed peak memory exceeds the GPU's (also
// fastest first: simulated, not crowned), then the ones that failed, in
// estimate order.
std::vector<const PlanRow*> simulated_ranking(const PlanReport& report);

// The ranked table of the simulated plans (`table`), or CSV (`csv`).
void write_plan_table(std::ostream& out, const PlanReport& report);
void write_plan_table_csv(std::ostream& out, const PlanReport& report);

// Whether a row may win: simulated, and its replayed memory fits.
bool can_win(const PlanRow& row);

// A few sentences on why the first plan of simulated_ranking wins: against
// the runner-up (by how much, and which of compute, bubble and exposed
// communication make the difference), against the best plan of another
// shape (tp, pp) when there is one, and how far the estimate was from the
// simulation. Empty when no plan can win; a plan whose replayed memory
// does not fit is named there, not compared.
std::vector<std::string> explain_winner(const PlanReport& report);

// plans.csv: one row per feasible plan (estimate order), simulated figures
// where simulated. plans.json: the search, the pruning counts, the rows,
// the plans that did not fit in memory and the explanation.
void write_plans_csv(std::ostream& out, const PlanReport& report);
void write_plans_json(std::ostream& out, const PlanReport& report);

}  // namespace trainsim::analysis
