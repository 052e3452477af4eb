// HTML for the report's pages: escaping for each context a string from a
// manifest lands in, and the shell every page shares. Internal to report.
#pragma once

#include <string>
#include <string_view>

#include "ki/json.h"

namespace ki::report {

// Text or a quoted attribute value: & < > " ' as character references, so
// a string can close no element and no attribute, whatever it holds.
std::string Esc(std::string_view s);

// JSON for a <script type="application/json"> element: < > & and the two
// line separators as \u escapes (valid JSON, equal when parsed), so that no
// string inside can end the element ("</script>") or open a comment.
std::string ScriptJson(const Json& j);

// An element with escaped text: Tag("td", x) is <td>x</td>; `attrs` is put
// in as it is (the caller builds it from Esc'd values).
std::string Tag(std::string_view name, std::string_view text, std::string_view attrs = "");

struct PageParts {
  std::string title;     // text, escaped here
  std::string root;      // "" for the index, "../" for pages one folder down
  std::string kind;      // "index", "group", "run", "operation": <body data-page>
  std::string body;      // HTML, already escaped where it must be
  Json data;             // the page's plot and filter data; null: none
  bool chart = false;    // the page draws a plot: load Chart.js
};
std::string RenderPage(const PageParts& p);

}  // namespace ki::report
