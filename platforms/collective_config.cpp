#include "platforms/collective_config.hpp"

#include <array>
#include <utility>

namespace trainsim::platforms {
namespace {
constexpr std::array<std::pair<std::string_view, CollectiveAlgorithm>, 6> kAlgorithms{{
    {"auto", CollectiveAlgorithm::automatic},
    {"ring", CollectiveAlgorithm::ring},
    {"tree", CollectiveAlgorithm::tree},
    {"hierarchical", CollectiveAlgorithm::hierarchical},
    {"nvls", CollectiveAlgorithm::nvls},
    {"nvls_tree", CollectiveAlgorithm::nvls_tree},
}};
}  // namespace

std::string_view to_string(CollectiveAlgorithm algorithm) {
  if (algorithm == CollectiveAlgorithm::direct)
    return "direct";
  if (algorithm == CollectiveAlgorithm::p2p_ring)
    return "p2p_ring";
  for (const auto& [name, value] : kAlgorithms)
    if (value == algorithm)
      return name;
  return "?";
}

std::optional<CollectiveAlgorithm> collective_algorithm_from_string(std::string_view text) {
  for (const auto& [name, value] : kAlgorithms)
    if (name == text)
      return value;
  return std::nullopt;
}

std::string_view collective_algorithm_names() {
  return "auto, ring, tree, hierarchical, nvls, nvls_tree";
}

std::string_view to_string(Fidelity fidelity) {
  switch (fidelity) {
    case Fidelity::detailed:
      return "detailed";
    case Fidelity::fast:
      return "fast";
    case Fidelity::automatic:
      return "auto";
  }
  return "?";
}

std::string_view to_string(RingProtocol protocol) {
  switch (protocol) {
    case RingProtocol::wire:
      return "wire";
    case RingProtocol::automatic:
      return "auto";
    case RingProtocol::simple:
      return "simple";
    case RingProtocol::ll128:
      return "ll128";
    case RingProtocol::ll:
      return "ll";
  }
  return "?";
}

}  // namespace trainsim::platforms
