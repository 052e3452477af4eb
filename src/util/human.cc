#include "ki/human.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ki::human {
namespace {

// `v` (finite, > 0) rounded to four significant digits, through the same
// decimal conversion printf uses, so that the unit chosen from the rounded
// value and the digits printed agree.
double Round4(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return std::strtod(buf, nullptr);
}

bool Is(std::string_view unit, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (unit == n) return true;
  return false;
}

}  // namespace

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string PercentChange(double ratio) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f%%", (ratio - 1) * 100);
  return buf;
}

std::string Sig4(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return "0";
  if (v < 0) return "-" + Sig4(-v);
  const double r = Round4(v);
  if (r < 1e-4) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3e", r);
    return buf;
  }
  // From 1000 up every integer digit is kept: "49216", not "4.922e4".
  if (r >= 1e3) return Fixed(v, 0);
  // Digits before the point: 1 for [1, 10), 0 or less below 1.
  const int exponent = static_cast<int>(std::floor(std::log10(r)));
  return Fixed(r, 3 - exponent);
}

std::string Duration(double ns) {
  if (!std::isfinite(ns) || ns == 0) return Sig4(ns) + " ns";
  if (ns < 0) return "-" + Duration(-ns);
  const double r = Round4(ns);
  if (r < 1e3) return Sig4(ns) + " ns";
  if (r < 1e6) return Sig4(ns / 1e3) + " µs";
  if (r < 1e9) return Sig4(ns / 1e6) + " ms";
  return Sig4(ns / 1e9) + " s";
}

std::string Bytes(uint64_t n) {
  if (n < 1024) return std::to_string(n) + " B";
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(n) / 1024;
  size_t u = 0;
  while (u + 1 < std::size(kUnits) && Round4(v) >= 1024) {
    v /= 1024;
    ++u;
  }
  return Sig4(v) + " " + kUnits[u];
}

std::string Quantity(double v, std::string_view unit) {
  if (Is(unit, {"ns"})) return Duration(v);
  if (Is(unit, {"us", "µs"})) return Duration(v * 1e3);
  if (Is(unit, {"ms"})) return Duration(v * 1e6);
  if (Is(unit, {"s"})) return Duration(v * 1e9);
  if (Is(unit, {"B", "bytes", "byte"}) && v >= 0 && v < 1.8e19 && v == std::floor(v))
    return Bytes(static_cast<uint64_t>(v));
  return unit.empty() ? Sig4(v) : Sig4(v) + " " + std::string(unit);
}

std::string ShortestDecimal(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

size_t DisplayWidth(std::string_view s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}

std::string Ellipsize(std::string_view s, size_t width) {
  if (DisplayWidth(s) <= width) return std::string(s);
  if (width == 0) return "";
  // Keep width - 1 characters, then "…".
  size_t kept = 0, i = 0;
  while (i < s.size()) {
    size_t len = 1;
    while (i + len < s.size() && (static_cast<unsigned char>(s[i + len]) & 0xC0) == 0x80) ++len;
    if (kept + 1 > width - 1) break;
    i += len;
    ++kept;
  }
  return std::string(s.substr(0, i)) + "…";
}

size_t TerminalWidth() {
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    unsigned long v = std::strtoul(c, &end, 10);
    if (*end == '\0' && v > 0 && v < 100000) return v;
  }
  if (::isatty(STDOUT_FILENO) != 1) return 0;
  struct winsize ws {};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

std::string Table::Render(size_t width, std::string_view indent) const {
  const size_t n = columns_.size();
  if (n == 0) return "";
  bool headings = false;
  std::vector<size_t> w(n, 0);
  for (size_t c = 0; c < n; ++c) {
    w[c] = DisplayWidth(columns_[c].heading);
    headings |= !columns_[c].heading.empty();
  }
  // A column with nothing in any row is left out, heading and all.
  std::vector<bool> shown(n, rows_.empty());
  for (const auto& row : rows_)
    for (size_t c = 0; c < n && c < row.size(); ++c) {
      w[c] = std::max(w[c], DisplayWidth(row[c]));
      shown[c] = shown[c] || !row[c].empty();
    }
  for (size_t c = 0; c < n; ++c)
    if (!shown[c]) w[c] = 0;
  // Fit: total = indent + widths + 2 per gap.
  if (width > 0) {
    size_t total = DisplayWidth(indent);
    for (size_t c = 0; c < n; ++c) total += shown[c] ? w[c] + (total > DisplayWidth(indent) ? 2 : 0) : 0;
    size_t shrink = n - 1;
    for (size_t c = 0; c < n; ++c)
      if (columns_[c].shrink) shrink = c;
    if (total > width) {
      const size_t excess = total - width;
      const size_t floor = std::min(w[shrink], columns_[shrink].min_width);
      w[shrink] = std::max(floor, w[shrink] > excess ? w[shrink] - excess : 0);
    }
  }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l(indent);
    // The last column that has text: padding after it would be trailing space.
    size_t last = 0;
    for (size_t c = 0; c < n && c < cells.size(); ++c)
      if (!cells[c].empty() && shown[c]) last = c;
    bool first = true;
    for (size_t c = 0; c <= last; ++c) {
      if (!shown[c]) continue;
      std::string cell = Ellipsize(c < cells.size() ? cells[c] : "", w[c]);
      const size_t pad = w[c] - DisplayWidth(cell);
      if (!first) l += "  ";
      first = false;
      if (columns_[c].align == Align::kRight) {
        l += std::string(pad, ' ') + cell;
      } else {
        l += cell;
        if (c < last) l += std::string(pad, ' ');
      }
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  if (headings) {
    std::vector<std::string> h;
    for (const auto& c : columns_) h.push_back(c.heading);
    line(h);
  }
  for (const auto& row : rows_) line(row);
  return out;
}

}  // namespace ki::human
