#include "usage.h"

#include <algorithm>
#include <cctype>

namespace ki::cli {
namespace {

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      // A swap of two neighbours counts as one edit ("shwo" is "show").
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], prev[j - 1]);
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// "{a,b,c}" as "a, b, c".
std::string ListOf(std::string_view set) {
  if (StartsWith(set, "{") && EndsWith(set, "}")) set = set.substr(1, set.size() - 2);
  std::string out;
  for (char c : set) out += c == ',' ? std::string(", ") : std::string(1, c);
  return out;
}

}  // namespace

std::string RephraseParseError(std::string_view m) {
  if (m == "A subcommand is required") return "a command is required";
  if (EndsWith(m, " is required") && m.find(' ') == m.size() - std::string_view(" is required").size()) {
    std::string_view name = m.substr(0, m.size() - std::string_view(" is required").size());
    if (StartsWith(name, "-")) return "missing option " + std::string(name);
    return "missing argument " + Upper(name);
  }
  for (std::string_view p : {"The following arguments were not expected: ", "The following argument was not expected: "}) {
    if (StartsWith(m, p)) {
      std::string_view rest = m.substr(p.size());
      return (rest.find(' ') == std::string_view::npos ? "unexpected argument '" : "unexpected arguments '") +
             std::string(rest) + "'";
    }
  }
  // ValidationError: "NAME: VALUE not in {a,b}" (IsMember) and
  // "NAME: Value V not in range A to B" (Range).
  if (size_t colon = m.find(": "); colon != std::string_view::npos) {
    std::string_view name = m.substr(0, colon), msg = m.substr(colon + 2);
    if (size_t at = msg.rfind(" not in {"); at != std::string_view::npos && EndsWith(msg, "}")) {
      return std::string(name) + ": '" + std::string(msg.substr(0, at)) + "' is not one of " +
             ListOf(msg.substr(at + 8));
    }
    if (StartsWith(msg, "Value ")) {
      if (size_t at = msg.find(" not in range "); at != std::string_view::npos) {
        std::string range(msg.substr(at + 14));
        if (size_t to = range.find(" to "); to != std::string::npos) range.replace(to, 4, " … ");
        return std::string(name) + ": " + std::string(msg.substr(6, at - 6)) + " is outside " + range;
      }
    }
    if (EndsWith(msg, " required TEXT missing") || EndsWith(msg, " required INT missing") ||
        EndsWith(msg, " required FLOAT missing") || EndsWith(msg, " required UINT missing"))
      return std::string(name) + " needs a value";
  }
  if (StartsWith(m, "Could not convert: ")) {
    std::string_view rest = m.substr(19);
    if (size_t eq = rest.find(" = "); eq != std::string_view::npos)
      return std::string(rest.substr(0, eq)) + ": '" + std::string(rest.substr(eq + 3)) + "' is not a valid value";
  }
  std::string out(m);
  if (!out.empty() && std::isupper(static_cast<unsigned char>(out[0])) &&
      !(out.size() > 1 && std::isupper(static_cast<unsigned char>(out[1]))))
    out[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(out[0])));
  return out;
}

std::vector<std::string> Nearest(std::string_view word, const std::vector<std::string>& names) {
  const size_t max = word.size() <= 4 ? 1 : 2;
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& n : names) {
    if (n.empty() || n[0] == '_') continue;  // hidden commands are never suggested
    size_t d = EditDistance(word, n);
    if (d <= max) scored.emplace_back(d, n);
    else if (word.size() >= 2 && StartsWith(n, word)) scored.emplace_back(max + 1, n);
  }
  std::sort(scored.begin(), scored.end());  // nearest first, then by name
  std::vector<std::string> out;
  for (auto& [d, n] : scored) out.push_back(std::move(n));
  return out;
}

std::string UnknownCommandMessage(std::string_view word, std::string_view where,
                                  const std::vector<std::string>& names) {
  std::string prefix = where.empty() ? "ki" : "ki " + std::string(where);
  std::string out = "'" + std::string(word) + "' is not a " + prefix + " command";
  auto near = Nearest(word, names);
  if (!near.empty()) {
    out += "; did you mean ";
    for (size_t i = 0; i < near.size() && i < 3; ++i) out += (i ? i + 1 == std::min<size_t>(near.size(), 3) ? " or " : ", " : "") + near[i];
    out += "?";
  }
  out += " (see `" + prefix + " --help`)";
  return out;
}

}  // namespace ki::cli
