// A JSON Schema `pattern` (an ECMAScript regular expression), compiled to a
// byte-level NFA and matched by simulating every NFA state at once
// (Thompson's construction, as RE2 and Go's regexp do).
//
// Why not std::regex: libstdc++'s matcher backtracks recursively, one stack
// frame per character a quantifier consumes, so a date-time of 100,000
// fraction digits ran the stack out (SIGSEGV). Here matching takes
// O(length x states) time, a fixed amount of memory per pattern and no
// recursion at all, whatever the subject string holds. Subjects are UTF-8.
//
// Supported syntax (what schemas/ uses, and the common rest): literals
// (UTF-8 included), escapes \d \D \w \W \s and escaped punctuation, '.',
// classes [..] and [^..] of ASCII members and ranges, groups ( ) and (?: ),
// alternation, ^ and $ (whole subject; no multiline), quantifiers * + ? {n}
// {n,} {n,m} and their lazy forms (the same answer for a yes/no match).
// Anything else (backreferences, lookaround, \b, \S, non-ASCII class
// members) fails to compile, so a schema cannot silently mean something
// other than ECMAScript says. '.' and negated sets match one code point;
// ECMAScript counts UTF-16 units, which differs only for '.' against
// characters beyond the BMP.
//
// Thread-safety: immutable after Compile; Matches may run concurrently.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ki/status.h"

namespace ki::schema {

class Pattern {
 public:
  static Result<std::unique_ptr<Pattern>> Compile(std::string_view source);

  // ECMAScript RegExp.prototype.test semantics: a match anywhere unless the
  // pattern anchors itself.
  bool Matches(std::string_view subject) const;
  const std::string& source() const { return source_; }
  size_t program_size() const { return prog_.size(); }

  struct Inst {
    enum Op : uint8_t { kByte, kSplit, kJump, kBegin, kEnd, kMatch } op;
    uint32_t x = 0, y = 0;  // kSplit: both targets; kJump: x; kByte: set index
  };

 private:
  Pattern() = default;
  std::string source_;
  std::vector<Inst> prog_;
  std::vector<std::bitset<256>> sets_;
  bool anchored_ = false;  // every path starts with kBegin: try position 0 only
  friend class PatternCompiler;
};

}  // namespace ki::schema
