#pragma once
// A small XML well-formedness check for the SVG and HTML trainsim writes:
// tags nest and close, attributes are quoted, text holds no bare '<' or '&'
// outside an entity. Returns an empty string when well formed, else what is
// wrong and where. (No XML library is a dependency of trainsim.)
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace trainsim::testing {

// Concatenation through append(): GCC 12 warns falsely (-Wrestrict, bug
// 105329) on "literal" + std::string.
template <class... Parts>
std::string cat(const Parts&... parts) {
  std::string out;
  (out.append(parts), ...);
  return out;
}

inline std::string xml_problem(const std::string& doc, bool html_void_tags = false) {
  std::vector<std::string> open;
  std::size_t i = 0;
  auto at = [&](std::size_t pos) { return cat(" at offset ", std::to_string(pos)); };
  auto check_text = [&](std::size_t from, std::size_t to) -> std::string {
    for (std::size_t k = from; k < to; ++k) {
      if (doc[k] == '>')
        continue;
      if (doc[k] == '&') {
        const auto semi = doc.find(';', k);
        if (semi == std::string::npos || semi - k > 8)
          return cat("bare '&'", at(k));
        const std::string entity = doc.substr(k + 1, semi - k - 1);
        if (entity != "amp" && entity != "lt" && entity != "gt" && entity != "quot" && entity != "apos" &&
            entity.rfind('#', 0) != 0)
          return cat("unknown entity &", entity, ";", at(k));
      }
    }
    return "";
  };
  bool root_seen = false;
  while (i < doc.size()) {
    const auto lt = doc.find('<', i);
    if (lt == std::string::npos) {
      if (auto p = check_text(i, doc.size()); !p.empty())
        return p;
      break;
    }
    if (auto p = check_text(i, lt); !p.empty())
      return p;
    if (doc.compare(lt, 4, "<!--") == 0) {
      const auto end = doc.find("-->", lt);
      if (end == std::string::npos)
        return cat("unclosed comment", at(lt));
      i = end + 3;
      continue;
    }
    if (doc.compare(lt, 2, "<?") == 0 || doc.compare(lt, 2, "<!") == 0) {
      const auto end = doc.find('>', lt);
      if (end == std::string::npos)
        return cat("unclosed declaration", at(lt));
      i = end + 1;
      continue;
    }
    const bool closing = doc.compare(lt, 2, "</") == 0;
    std::size_t k = lt + (closing ? 2 : 1);
    const std::size_t name_start = k;
    while (k < doc.size() && (std::isalnum(static_cast<unsigned char>(doc[k])) || doc[k] == '-' ||
                              doc[k] == ':' || doc[k] == '_'))
      ++k;
    const std::string name = doc.substr(name_start, k - name_start);
    if (name.empty())
      return cat("'<' not starting a tag", at(lt));
    if (closing) {
      while (k < doc.size() && std::isspace(static_cast<unsigned char>(doc[k])))
        ++k;
      if (k >= doc.size() || doc[k] != '>')
        return cat("malformed closing tag </", name, at(lt));
      if (open.empty() || open.back() != name)
        return cat("</", name, "> closes ",
                   open.empty() ? std::string("nothing") : cat("<", open.back(), ">"), at(lt));
      open.pop_back();
      i = k + 1;
      continue;
    }
    // Attributes: name="value" or name='value'.
    bool self_closing = false;
    for (;;) {
      while (k < doc.size() && std::isspace(static_cast<unsigned char>(doc[k])))
        ++k;
      if (k >= doc.size())
        return cat("unterminated tag <", name, at(lt));
      if (doc[k] == '>') {
        ++k;
        break;
      }
      if (doc.compare(k, 2, "/>") == 0) {
        self_closing = true;
        k += 2;
        break;
      }
      const std::size_t attr_start = k;
      while (k < doc.size() && doc[k] != '=' && doc[k] != '>' &&
             !std::isspace(static_cast<unsigned char>(doc[k])))
        ++k;
      if (k == attr_start || k >= doc.size() || doc[k] != '=')
        return cat("attribute without a value in <", name, at(attr_start));
      ++k;
      if (k >= doc.size() || (doc[k] != '"' && doc[k] != '\''))
        return cat("unquoted attribute in <", name, at(k));
      const char quote = doc[k];
      const auto end = doc.find(quote, k + 1);
      if (end == std::string::npos)
        return cat("unterminated attribute in <", name, at(k));
      if (doc.find('<', k + 1) < end)
        return cat("'<' inside an attribute of <", name, at(k));
      if (auto p = check_text(k + 1, end); !p.empty())
        return p;
      k = end + 1;
    }
    static const std::vector<std::string> kVoid{"meta", "br", "hr", "img", "input", "link"};
    const bool is_void = html_void_tags && std::find(kVoid.begin(), kVoid.end(), name) != kVoid.end();
    if (!self_closing && !is_void) {
      if (open.empty() && root_seen && !html_void_tags)
        return cat("second root element <", name, at(lt));
      open.push_back(name);
      root_seen = true;
      // Raw text elements of HTML.
      if (html_void_tags && (name == "style" || name == "script")) {
        const auto end = doc.find("</" + name, k);
        if (end == std::string::npos)
          return cat("unclosed <", name, ">");
        k = end;
      }
    }
    i = k;
  }
  if (!open.empty())
    return cat("<", open.back(), "> is never closed");
  if (!root_seen)
    return "no element";
  return "";
}

// Occurrences of `needle` in `text`.
inline std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + needle.size()))
    ++n;
  return n;
}

}  // namespace trainsim::testing
