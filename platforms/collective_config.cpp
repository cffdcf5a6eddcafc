#include "platforms/collective_config.hpp"

namespace trainsim::platforms {
namespace {

// The word of `value` in `table`, or "?".
template <class E>
std::string_view word_of(const ChoiceWords<E>& table, E value) {
  for (const auto& [word, v] : table)
    if (v == value)
      return word;
  return "?";
}

}  // namespace

const ChoiceWords<CollectiveAlgorithm>& collective_algorithm_words() {
  static const ChoiceWords<CollectiveAlgorithm> words{
      {"auto", CollectiveAlgorithm::automatic}, {"ring", CollectiveAlgorithm::ring},
      {"tree", CollectiveAlgorithm::tree},      {"hierarchical", CollectiveAlgorithm::hierarchical},
      {"nvls", CollectiveAlgorithm::nvls},      {"nvls_tree", CollectiveAlgorithm::nvls_tree},
  };
  return words;
}

const ChoiceWords<Fidelity>& fidelity_words() {
  static const ChoiceWords<Fidelity> words{
      {"auto", Fidelity::automatic}, {"detailed", Fidelity::detailed}, {"fast", Fidelity::fast}};
  return words;
}

const ChoiceWords<RingProtocol>& ring_protocol_words() {
  static const ChoiceWords<RingProtocol> words{{"wire", RingProtocol::wire},
                                               {"auto", RingProtocol::automatic},
                                               {"simple", RingProtocol::simple},
                                               {"ll128", RingProtocol::ll128},
                                               {"ll", RingProtocol::ll}};
  return words;
}

std::string_view to_string(CollectiveAlgorithm algorithm) {
  // Reported, never asked for: not in the users' table.
  if (algorithm == CollectiveAlgorithm::direct)
    return "direct";
  if (algorithm == CollectiveAlgorithm::p2p_ring)
    return "p2p_ring";
  if (algorithm == CollectiveAlgorithm::deepep)
    return "deepep";
  return word_of(collective_algorithm_words(), algorithm);
}

std::optional<CollectiveAlgorithm> collective_algorithm_from_string(std::string_view text) {
  for (const auto& [name, value] : collective_algorithm_words())
    if (name == text)
      return value;
  return std::nullopt;
}

std::string_view to_string(Fidelity fidelity) {
  return word_of(fidelity_words(), fidelity);
}

std::string_view to_string(RingProtocol protocol) {
  return word_of(ring_protocol_words(), protocol);
}

}  // namespace trainsim::platforms
