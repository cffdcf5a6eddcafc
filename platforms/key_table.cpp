#include "platforms/key_table.hpp"

namespace trainsim::platforms {

const KeySpec* KeyTable::find(std::string_view key) const {
  for (const auto& k : keys)
    if (k.name == key)
      return &k;
  return nullptr;
}

std::string_view to_string(ValueType type) {
  switch (type) {
    case ValueType::text:
      return "text";
    case ValueType::label:
      return "a name";
    case ValueType::choice:
      return "a choice";
    case ValueType::integer:
      return "an integer";
    case ValueType::number:
      return "a number";
    case ValueType::boolean:
      return "a boolean";
    case ValueType::bytes:
      return "bytes";
    case ValueType::bandwidth:
      return "a bandwidth";
    case ValueType::duration:
      return "a duration";
    case ValueType::flop_rate:
      return "a FLOP rate";
    case ValueType::power:
      return "a power";
    case ValueType::integer_list:
      return "a list of integers";
    case ValueType::map:
      return "a map";
    case ValueType::map_list:
      return "a list of maps";
    case ValueType::any:
      return "any value";
  }
  return "?";
}

}  // namespace trainsim::platforms
