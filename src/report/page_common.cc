// Formatting shared by the pages.
#include "ki/human.h"
#include "report/html.h"
#include "report/pages.h"

namespace ki::report {

std::string ShortDigest(const Digest& d) { return d.str().substr(0, 19) + "…"; }
std::string ShortDigest(const std::string& d) { return d.size() > 19 ? d.substr(0, 19) + "…" : d; }

std::string ValueText(const catalog::RankEntry& e) {
  if (!e.value) return "-";
  return human::Quantity(*e.value, e.unit);
}

std::string IntervalText(const catalog::RankEntry& e) {
  if (!e.interval) return "";
  return human::Quantity(e.interval->first, e.unit) + " – " + human::Quantity(e.interval->second, e.unit);
}

std::string RunLabel(const catalog::RankEntry& e) {
  if (!e.implementation.empty()) return e.implementation;
  if (!e.name.empty()) return e.name;
  return e.id;
}

std::string Row(const std::string& key, const std::string& value_html) {
  return "<tr><th>" + Esc(key) + "</th><td>" + value_html + "</td></tr>\n";
}

}  // namespace ki::report
