// Golden outputs of the human formatting module (include/ki/human.h).
#include "ki/human.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>

#include "testutil/testutil.h"

namespace ki::human {
namespace {

TEST(Fixed, ExactlyTheDecimalsAsked) {
  EXPECT_EQ(Fixed(1.0341, 3), "1.034");
  EXPECT_EQ(Fixed(0.98, 3), "0.980");  // trailing zeros kept: a column lines up
  EXPECT_EQ(Fixed(2, 0), "2");
  EXPECT_EQ(Fixed(-0.5, 2), "-0.50");
}

TEST(PercentChange, SignedOneDecimal) {
  EXPECT_EQ(PercentChange(1.034), "+3.4%");
  EXPECT_EQ(PercentChange(0.981), "-1.9%");
  EXPECT_EQ(PercentChange(1.0), "+0.0%");
  EXPECT_EQ(PercentChange(2.5), "+150.0%");
}

TEST(Sig4, FourSignificantDigitsTrailingZerosKept) {
  EXPECT_EQ(Sig4(353), "353.0");
  EXPECT_EQ(Sig4(12.4), "12.40");
  EXPECT_EQ(Sig4(1), "1.000");
  EXPECT_EQ(Sig4(0.006794965825974941), "0.006795");
  EXPECT_EQ(Sig4(1.6868000000000001), "1.687");
  EXPECT_EQ(Sig4(9.99996), "10.00");  // rounding carries into the next digit
  EXPECT_EQ(Sig4(999.96), "1000");
  EXPECT_EQ(Sig4(49215.900000000001), "49216");  // integer digits are kept
  EXPECT_EQ(Sig4(0.00006991736867208841), "6.992e-05");
  EXPECT_EQ(Sig4(-2.5), "-2.500");
  EXPECT_EQ(Sig4(0), "0");
  EXPECT_EQ(Sig4(std::nan("")), "nan");
}

TEST(Duration, ScaledUnitChosenAfterRounding) {
  EXPECT_EQ(Duration(812), "812.0 ns");
  EXPECT_EQ(Duration(5), "5.000 ns");
  EXPECT_EQ(Duration(353000), "353.0 µs");
  EXPECT_EQ(Duration(12.4e6), "12.40 ms");
  EXPECT_EQ(Duration(1.2345e9), "1.234 s");  // 1.2345 is below 1.2345 in binary
  EXPECT_EQ(Duration(999.96), "1.000 µs");
  EXPECT_EQ(Duration(999999.9), "1.000 ms");
  EXPECT_EQ(Duration(0), "0 ns");
  EXPECT_EQ(Duration(12345e9), "12345 s");
}

TEST(Bytes, BinaryUnits) {
  EXPECT_EQ(Bytes(0), "0 B");
  EXPECT_EQ(Bytes(812), "812 B");
  EXPECT_EQ(Bytes(1023), "1023 B");
  EXPECT_EQ(Bytes(1024), "1.000 KiB");
  EXPECT_EQ(Bytes(1264), "1.234 KiB");
  EXPECT_EQ(Bytes(13002342), "12.40 MiB");
  EXPECT_EQ(Bytes(uint64_t(1) << 30), "1.000 GiB");
  EXPECT_EQ(Bytes((uint64_t(1) << 20) - 1), "1.000 MiB");  // 1023.999 KiB rounds up a unit
}

TEST(Quantity, UnitsFromDocuments) {
  EXPECT_EQ(Quantity(0.00006991736867208841, "s"), "69.92 µs");
  EXPECT_EQ(Quantity(0.0001846007463842946, "s"), "184.6 µs");
  EXPECT_EQ(Quantity(6700, "ns"), "6.700 µs");
  EXPECT_EQ(Quantity(6.7, "us"), "6.700 µs");
  EXPECT_EQ(Quantity(2.5, "ms"), "2.500 ms");
  EXPECT_EQ(Quantity(2048, "bytes"), "2.000 KiB");
  EXPECT_EQ(Quantity(812.25, "TFLOP/s"), "812.2 TFLOP/s");
  EXPECT_EQ(Quantity(0.5, ""), "0.5000");
}

TEST(ShortestDecimal, RoundTripsWithTheFewestDigits) {
  EXPECT_EQ(ShortestDecimal(0.006794965825974941), "0.006794965825974941");
  EXPECT_EQ(ShortestDecimal(0.0067949658259749413), "0.006794965825974941");
  EXPECT_EQ(ShortestDecimal(49215.900000000001), "49215.9");
  EXPECT_EQ(ShortestDecimal(1.6868000000000001), "1.6868");
  EXPECT_EQ(ShortestDecimal(3), "3");
  EXPECT_EQ(ShortestDecimal(1e21), "1e+21");
  for (double v : {0.1, 1.0 / 3, 6.02214076e23, 5e-324, 0.00006991736867208841})
    EXPECT_EQ(std::strtod(ShortestDecimal(v).c_str(), nullptr), v) << v;
}

TEST(Ellipsize, CutsWholeCharacters) {
  EXPECT_EQ(Ellipsize("abcdef", 6), "abcdef");
  EXPECT_EQ(Ellipsize("abcdef", 4), "abc…");
  EXPECT_EQ(Ellipsize("µµµµµ", 3), "µµ…");
  EXPECT_EQ(DisplayWidth("353.0 µs"), 8u);
}

TEST(Table, WidthsFromContentRightAlignedNumbers) {
  Table t({{"rank", Table::Align::kRight}, {"value", Table::Align::kRight}, {"run"}});
  t.AddRow({"1", "6.700 µs", "sha256:5ee2… ki-gqa-decode-fast"});
  t.AddRow({"=12", "353.0 µs", "sha256:215a… sol-trace"});
  EXPECT_EQ(t.Render(),
            "  rank     value  run\n"
            "     1  6.700 µs  sha256:5ee2… ki-gqa-decode-fast\n"
            "   =12  353.0 µs  sha256:215a… sol-trace\n");
}

TEST(Table, NoHeadingLineWithoutHeadingsAndNoTrailingSpace) {
  Table t({{}, {}});
  t.AddRow({"status", "passed"});
  t.AddRow({"observed at", ""});
  EXPECT_EQ(t.Render(0, "  "), "  status       passed\n  observed at\n");
}

TEST(Table, AColumnEmptyInEveryRowIsLeftOut) {
  Table t({{"rank", Table::Align::kRight}, {"95% interval"}, {"run"}});
  t.AddRow({"1", "", "a"});
  t.AddRow({"2", "", "b"});
  EXPECT_EQ(t.Render(), "  rank  run\n     1  a\n     2  b\n");
  t.AddRow({"3", "1.000 µs – 2.000 µs", "c"});
  EXPECT_EQ(t.Render(),
            "  rank  95% interval         run\n"
            "     1                       a\n"
            "     2                       b\n"
            "     3  1.000 µs – 2.000 µs  c\n");
}

TEST(Table, FitsTheWidthByCuttingTheShrinkColumn) {
  Table t({{"name", Table::Align::kLeft, true, 4}, {"size", Table::Align::kRight}});
  t.AddRow({"a-very-long-name-indeed", "1.000 KiB"});
  // 2 indent + 23 + 2 + 9 = 36 columns; fitted to 24: the name keeps 11.
  EXPECT_EQ(t.Render(24), "  name              size\n  a-very-lon…  1.000 KiB\n");
  // Never below min_width: past it the line is simply longer.
  EXPECT_EQ(t.Render(10), "  name       size\n  a-v…  1.000 KiB\n");
}

TEST(TerminalWidth, ColumnsFromTheEnvironment) {
  ::setenv("COLUMNS", "100", 1);
  EXPECT_EQ(TerminalWidth(), 100u);
  ::setenv("COLUMNS", "wide", 1);
  // Not a number: ignored; under ctest standard output is a pipe, so 0.
  if (::isatty(STDOUT_FILENO) != 1) {
    EXPECT_EQ(TerminalWidth(), 0u);
  }
  ::unsetenv("COLUMNS");
}

}  // namespace
}  // namespace ki::human
