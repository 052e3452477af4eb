// Numbers and tables for people: what the `ki` command prints on its human
// pages. Machine output (`--json`, tab-separated lines) never goes through
// here; it keeps full precision.
//
// One rule for every quantity: four significant digits with a scaled unit
// (ns, µs, ms, s; B, KiB, MiB, GiB, TiB), trailing zeros kept so that a
// column of them lines up ("353.0 µs", "12.40 ms"). A value that came from
// a JSON document and has no unit is printed as the shortest decimal that
// reads back to the same double ("49215.9", not "49215.900000000001").
//
// Thread-safety: pure functions; Table is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ki::human {

// `v` to four significant digits, trailing zeros kept ("353.0", "0.006795",
// "1.000"); integer digits are never dropped ("49216"); below 1e-4 in
// exponent form ("6.992e-07"). "nan", "inf", "-inf" for the non-finite.
std::string Sig4(double v);

// A duration given in nanoseconds: "812.0 ns", "353.0 µs", "12.40 ms",
// "1.235 s" (the unit is chosen after rounding: 999.96 ns is "1.000 µs").
std::string Duration(double ns);

// A size in bytes: "812 B", "1.235 KiB", "12.40 MiB", "1.000 GiB".
std::string Bytes(uint64_t n);

// A value in `unit`: durations (ns, us, µs, ms, s) and sizes (B, bytes) are
// scaled as above; any other unit is Sig4 followed by the unit ("0.8123
// TFLOP/s"), an empty unit Sig4 alone.
std::string Quantity(double v, std::string_view unit);

// `v` with exactly `decimals` digits after the point ("1.034" for
// Fixed(1.0341, 3)): ratios of two runs, change points and their intervals,
// which are read against each other and so keep one width.
std::string Fixed(double v, int decimals);

// A ratio as a signed change in percent to one decimal: 1.034 is "+3.4%",
// 0.981 is "-1.9%" (how much slower or faster B is than A).
std::string PercentChange(double ratio);

// The shortest decimal that parses back to `v` (std::to_chars), the form
// for a number read from a JSON document: "0.006794965825974941",
// "49215.9", "1e+21".
std::string ShortestDecimal(double v);

// Columns on a terminal: UTF-8 characters, each one column wide (ki's own
// output has no wide characters; a byte that is not UTF-8 counts as one).
size_t DisplayWidth(std::string_view s);

// `s` cut to at most `width` columns, ending in "…" when it was cut.
std::string Ellipsize(std::string_view s, size_t width);

// The width human pages are fitted to: $COLUMNS when set to a number, else
// the terminal's width when standard output is one, else 0 (no limit: a
// pipe or a file gets every character).
size_t TerminalWidth();

// A table whose column widths come from its content. Columns are separated
// by two spaces; the last column is not padded, and a column empty in every
// row is left out with its heading. When the table is wider
// than the width it is rendered at, the column marked `shrink` (else the
// last) is cut, with "…", down to `min_width`.
class Table {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string heading;  // empty for every column: no heading line
    Align align = Align::kLeft;
    bool shrink = false;
    size_t min_width = 8;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}

  // A row with fewer cells than columns is padded with empty cells.
  void AddRow(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }
  bool empty() const { return rows_.empty(); }

  // Every line starts with `indent`; width 0 means no limit.
  std::string Render(size_t width = 0, std::string_view indent = "  ") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace ki::human
