#include "report/html.h"

namespace ki::report {

std::string Esc(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string ScriptJson(const Json& j) {
  // Invalid UTF-8 in a manifest string is replaced rather than thrown on:
  // the page must still render.
  const std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xe2' && i + 2 < s.size() && s[i + 1] == '\x80' && (s[i + 2] == '\xa8' || s[i + 2] == '\xa9')) {
      out += s[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string Tag(std::string_view name, std::string_view text, std::string_view attrs) {
  std::string out;
  out.reserve(text.size() + 2 * name.size() + attrs.size() + 8);
  out += '<';
  out += name;
  if (!attrs.empty()) {
    out += ' ';
    out += attrs;
  }
  out += '>';
  out += Esc(text);
  out += "</";
  out += name;
  out += '>';
  return out;
}

std::string RenderPage(const PageParts& p) {
  std::string out;
  out.reserve(p.body.size() + 2048);
  // The policy lets only the site's own script files run: an inline script
  // or handler that escaping somehow let through would not execute.
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'self'; "
      "style-src 'self'; img-src 'self' data:\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  out += Esc(p.title);
  out += " · ki report</title>\n<link rel=\"stylesheet\" href=\"" + p.root + "assets/report.css\">\n</head>\n";
  out += "<body data-page=\"" + Esc(p.kind) + "\">\n<header><a class=\"home\" href=\"" + p.root +
         "index.html\">ki report</a></header>\n<main>\n";
  out += p.body;
  out += "</main>\n";
  if (!p.data.is_null()) out += "<script type=\"application/json\" id=\"ki-data\">" + ScriptJson(p.data) + "</script>\n";
  if (p.chart) out += "<script src=\"" + p.root + "assets/chart.min.js\"></script>\n";
  out += "<script src=\"" + p.root + "assets/report.js\"></script>\n</body></html>\n";
  return out;
}

}  // namespace ki::report
