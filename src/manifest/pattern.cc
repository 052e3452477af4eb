#include "manifest/pattern.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>

namespace ki::schema {
namespace {

using ByteSet = std::bitset<256>;

constexpr size_t kInfinite = std::numeric_limits<size_t>::max();
// Limits on the pattern (compile time), not the subject: a counted repeat is
// expanded into copies, so {1000}{1000} would otherwise build 10^6 states.
constexpr int kMaxNesting = 64;
constexpr size_t kMaxRepeat = 1000;
constexpr size_t kMaxProgram = 100000;

// The pattern's syntax tree.
struct Re {
  enum Kind { kEmpty, kSet, kCat, kAlt, kRepeat, kBegin, kEnd } kind = kEmpty;
  ByteSet set;                                  // kSet: one byte
  std::vector<std::unique_ptr<Re>> subs;        // kCat, kAlt; kRepeat: one
  size_t min = 0, max = 0;                      // kRepeat
};
using RePtr = std::unique_ptr<Re>;

RePtr Make(Re::Kind k) {
  auto r = std::make_unique<Re>();
  r->kind = k;
  return r;
}
RePtr Byte(const ByteSet& s) {
  RePtr r = Make(Re::kSet);
  r->set = s;
  return r;
}
RePtr Range(unsigned lo, unsigned hi) {
  ByteSet s;
  for (unsigned c = lo; c <= hi; ++c) s.set(c);
  return Byte(s);
}
RePtr Literal(std::string_view bytes) {
  RePtr r = Make(Re::kCat);
  for (unsigned char c : bytes) {
    ByteSet s;
    s.set(c);
    r->subs.push_back(Byte(s));
  }
  return r;
}
// Any code point of two, three or four bytes (subjects are valid UTF-8, so
// the lead byte decides the length).
RePtr AnyMultibyte() {
  RePtr alt = Make(Re::kAlt);
  struct Lead {
    unsigned lo, hi;
    int tails;
  };
  static constexpr Lead kLeads[] = {{0xC2, 0xDF, 1}, {0xE0, 0xEF, 2}, {0xF0, 0xF4, 3}};
  for (const Lead& l : kLeads) {
    RePtr cat = Make(Re::kCat);
    cat->subs.push_back(Range(l.lo, l.hi));
    for (int i = 0; i < l.tails; ++i) cat->subs.push_back(Range(0x80, 0xBF));
    alt->subs.push_back(std::move(cat));
  }
  return alt;
}

void AddDigits(ByteSet* s) {
  for (char c = '0'; c <= '9'; ++c) s->set(static_cast<unsigned char>(c));
}
void AddWord(ByteSet* s) {
  AddDigits(s);
  for (char c = 'a'; c <= 'z'; ++c) s->set(static_cast<unsigned char>(c));
  for (char c = 'A'; c <= 'Z'; ++c) s->set(static_cast<unsigned char>(c));
  s->set('_');
}
void AddAsciiSpace(ByteSet* s) {
  for (char c : {' ', '\t', '\n', '\v', '\f', '\r'}) s->set(static_cast<unsigned char>(c));
}
// ECMAScript's WhiteSpace and LineTerminator beyond ASCII, in UTF-8.
constexpr std::string_view kWideSpace[] = {
    "\u00A0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006", "\u2007",
    "\u2008", "\u2009", "\u200A", "\u2028", "\u2029", "\u202F", "\u205F", "\u3000", "\uFEFF"};

// A set of ASCII bytes, optionally with whole multibyte strings beside it
// (\s inside a class), optionally negated (then: any code point outside).
RePtr ClassRe(const ByteSet& ascii, bool wide_space, bool negated) {
  RePtr alt = Make(Re::kAlt);
  if (negated) {
    ByteSet s;
    for (unsigned c = 0; c < 0x80; ++c)
      if (!ascii.test(c)) s.set(c);
    alt->subs.push_back(Byte(s));
    alt->subs.push_back(AnyMultibyte());
    return alt;
  }
  alt->subs.push_back(Byte(ascii));
  if (wide_space)
    for (std::string_view w : kWideSpace) alt->subs.push_back(Literal(w));
  return alt;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Result<RePtr> Parse() {
    RePtr r = Alternation(0);
    if (!error_.empty()) return Fail();
    if (pos_ != s_.size()) {
      error_ = "unmatched ')'";
      return Fail();
    }
    return r;
  }

 private:
  Status Fail() const {
    return Status::InvalidInput("pattern " + std::string(s_) + ": " + error_ + " at offset " +
                                std::to_string(pos_));
  }
  bool Error(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
    return false;
  }
  bool AtEnd() const { return pos_ >= s_.size(); }
  char Peek() const { return s_[pos_]; }

  RePtr Alternation(int depth) {
    if (depth > kMaxNesting) {
      Error("groups nested too deeply");
      return Make(Re::kEmpty);
    }
    RePtr alt = Make(Re::kAlt);
    alt->subs.push_back(Sequence(depth));
    while (error_.empty() && !AtEnd() && Peek() == '|') {
      ++pos_;
      alt->subs.push_back(Sequence(depth));
    }
    if (alt->subs.size() == 1) return std::move(alt->subs[0]);
    return alt;
  }

  RePtr Sequence(int depth) {
    RePtr cat = Make(Re::kCat);
    while (error_.empty() && !AtEnd() && Peek() != '|' && Peek() != ')') {
      RePtr atom = Atom(depth);
      if (!error_.empty()) break;
      cat->subs.push_back(Quantified(std::move(atom)));
    }
    return cat;
  }

  RePtr Quantified(RePtr atom) {
    if (AtEnd()) return atom;
    size_t min = 0, max = 0;
    char q = Peek();
    if (q == '*') min = 0, max = kInfinite, ++pos_;
    else if (q == '+') min = 1, max = kInfinite, ++pos_;
    else if (q == '?') min = 0, max = 1, ++pos_;
    else if (q == '{') {
      if (!Counts(&min, &max)) return atom;
    } else {
      return atom;
    }
    if (atom->kind == Re::kBegin || atom->kind == Re::kEnd) {
      Error("nothing to repeat");
      return atom;
    }
    if (!AtEnd() && Peek() == '?') ++pos_;  // lazy: same yes/no answer
    if (!AtEnd() && (Peek() == '*' || Peek() == '+' || Peek() == '?' || Peek() == '{')) {
      Error("nothing to repeat");
      return atom;
    }
    RePtr r = Make(Re::kRepeat);
    r->min = min;
    r->max = max;
    r->subs.push_back(std::move(atom));
    return r;
  }

  // {n} {n,} {n,m} at pos_.
  bool Counts(size_t* min, size_t* max) {
    size_t i = pos_ + 1;
    auto number = [&](size_t* out) {
      size_t start = i, v = 0;
      while (i < s_.size() && s_[i] >= '0' && s_[i] <= '9') {
        v = v * 10 + (s_[i] - '0');
        if (v > kMaxRepeat) return Error("repeat count over " + std::to_string(kMaxRepeat));
        ++i;
      }
      *out = v;
      return i > start || Error("malformed {n,m} quantifier");
    };
    if (!number(min)) return false;
    *max = *min;
    if (i < s_.size() && s_[i] == ',') {
      ++i;
      if (i < s_.size() && s_[i] == '}') *max = kInfinite;
      else if (!number(max)) return false;
    }
    if (i >= s_.size() || s_[i] != '}') return Error("malformed {n,m} quantifier");
    if (*max < *min) return Error("numbers out of order in {n,m} quantifier");
    pos_ = i + 1;
    return true;
  }

  RePtr Atom(int depth) {
    unsigned char c = Peek();
    switch (c) {
      case '(': {
        ++pos_;
        if (s_.substr(pos_, 2) == "?:") pos_ += 2;
        else if (!AtEnd() && Peek() == '?') {
          Error("lookaround and named groups are not supported");
          return Make(Re::kEmpty);
        }
        RePtr inner = Alternation(depth + 1);
        if (error_.empty() && (AtEnd() || Peek() != ')')) Error("unterminated group");
        ++pos_;
        return inner;
      }
      case '[': return Class();
      case '.': {
        ++pos_;
        ByteSet nl;
        nl.set('\n');
        nl.set('\r');
        return ClassRe(nl, false, /*negated=*/true);
      }
      case '^': ++pos_; return Make(Re::kBegin);
      case '$': ++pos_; return Make(Re::kEnd);
      case '\\': return Escape();
      case '*': case '+': case '?': case '{':
        Error("nothing to repeat");
        return Make(Re::kEmpty);
      case ']': case '}':
        Error(std::string("unescaped '") + static_cast<char>(c) + "'");
        return Make(Re::kEmpty);
      default: break;
    }
    // One literal character, all of its UTF-8 bytes.
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    if (len == 0 || pos_ + len > s_.size()) {
      Error("invalid UTF-8");
      return Make(Re::kEmpty);
    }
    RePtr r = Literal(s_.substr(pos_, len));
    pos_ += len;
    return r;
  }

  // A class escape (\d \w \s, and their negations outside a class) or one
  // literal code point, at pos_ (on the backslash).
  RePtr Escape() {
    if (pos_ + 1 >= s_.size()) {
      Error("\\ at end of pattern");
      return Make(Re::kEmpty);
    }
    char e = s_[pos_ + 1];
    pos_ += 2;
    ByteSet set;
    switch (e) {
      case 'd': AddDigits(&set); return ClassRe(set, false, false);
      case 'D': AddDigits(&set); return ClassRe(set, false, true);
      case 'w': AddWord(&set); return ClassRe(set, false, false);
      case 'W': AddWord(&set); return ClassRe(set, false, true);
      case 's': AddAsciiSpace(&set); return ClassRe(set, true, false);
      default: break;
    }
    pos_ -= 2;
    uint32_t cp = 0;
    if (!EscapedCodePoint(&cp)) return Make(Re::kEmpty);
    std::string bytes;
    AppendUtf8(cp, &bytes);
    return Literal(bytes);
  }

  // \t \n \v \f \r \0 \xHH \uHHHH or escaped punctuation, at pos_.
  bool EscapedCodePoint(uint32_t* cp) {
    char e = s_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case 't': *cp = '\t'; return true;
      case 'n': *cp = '\n'; return true;
      case 'v': *cp = '\v'; return true;
      case 'f': *cp = '\f'; return true;
      case 'r': *cp = '\r'; return true;
      case '0':
        if (!AtEnd() && Peek() >= '0' && Peek() <= '9') return Error("octal escapes are not supported");
        *cp = 0;
        return true;
      case 'x': case 'u': {
        size_t digits = e == 'x' ? 2 : 4;
        if (pos_ + digits > s_.size()) return Error("truncated \\" + std::string(1, e) + " escape");
        uint32_t v = 0;
        for (size_t i = 0; i < digits; ++i) {
          char h = s_[pos_ + i];
          int d = h >= '0' && h <= '9' ? h - '0' : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10 : -1;
          if (d < 0) return Error("malformed \\" + std::string(1, e) + " escape");
          v = v * 16 + d;
        }
        if (v >= 0xD800 && v <= 0xDFFF) return Error("surrogate escapes are not supported");
        pos_ += digits;
        *cp = v;
        return true;
      }
      default: break;
    }
    unsigned char u = static_cast<unsigned char>(e);
    if (u < 0x80 && !std::isalnum(u)) {
      *cp = u;
      return true;
    }
    return Error(std::string("unsupported escape \\") + e);
  }

  RePtr Class() {
    ++pos_;  // '['
    bool negated = !AtEnd() && Peek() == '^';
    if (negated) ++pos_;
    ByteSet set;
    bool wide_space = false;
    while (true) {  // [] and [^] are ECMAScript's empty and full classes
      if (AtEnd()) {
        Error("unterminated character class");
        return Make(Re::kEmpty);
      }
      if (Peek() == ']') break;
      uint32_t lo = 0;
      bool is_set = false;
      if (!ClassAtom(&lo, &set, &wide_space, &is_set)) return Make(Re::kEmpty);
      if (!is_set && pos_ + 1 < s_.size() && Peek() == '-' && s_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi = 0;
        bool hi_set = false;
        if (!ClassAtom(&hi, &set, &wide_space, &hi_set)) return Make(Re::kEmpty);
        if (hi_set) {
          Error("class escape in a range");
          return Make(Re::kEmpty);
        }
        if (hi < lo) {
          Error("range out of order in character class");
          return Make(Re::kEmpty);
        }
        for (uint32_t ch = lo; ch <= hi; ++ch) set.set(ch);
      } else if (!is_set) {
        set.set(lo);
      }
    }
    ++pos_;  // ']'
    if (negated && wide_space) {
      Error("\\s in a negated class is not supported");
      return Make(Re::kEmpty);
    }
    return ClassRe(set, wide_space, negated);
  }

  // One member of a class: an ASCII code point (*cp) or a class escape added
  // to *set directly (*is_set).
  bool ClassAtom(uint32_t* cp, ByteSet* set, bool* wide_space, bool* is_set) {
    unsigned char c = Peek();
    *is_set = false;
    if (c >= 0x80) return Error("non-ASCII characters in a class are not supported");
    if (c != '\\') {
      *cp = c;
      ++pos_;
      return true;
    }
    if (pos_ + 1 >= s_.size()) return Error("\\ at end of pattern");
    char e = s_[pos_ + 1];
    if (e == 'd' || e == 'w' || e == 's') {
      pos_ += 2;
      *is_set = true;
      if (e == 'd') AddDigits(set);
      else if (e == 'w') AddWord(set);
      else AddAsciiSpace(set), *wide_space = true;
      return true;
    }
    if (e == 'b') return Error("\\b in a class is not supported");
    if (!EscapedCodePoint(cp)) return false;
    if (*cp >= 0x80) return Error("non-ASCII characters in a class are not supported");
    return true;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

// Emits the program for a syntax tree (Thompson's construction).
class PatternCompiler {
 public:
  explicit PatternCompiler(Pattern* p) : p_(p) {}

  bool Emit(const Re& r) {
    if (p_->prog_.size() > kMaxProgram) return false;
    using I = Pattern::Inst;
    switch (r.kind) {
      case Re::kEmpty: return true;
      case Re::kSet:
        p_->sets_.push_back(r.set);
        Push({I::kByte, static_cast<uint32_t>(p_->sets_.size() - 1), 0});
        return true;
      case Re::kBegin: Push({I::kBegin}); return true;
      case Re::kEnd: Push({I::kEnd}); return true;
      case Re::kCat:
        for (const auto& s : r.subs)
          if (!Emit(*s)) return false;
        return true;
      case Re::kAlt: {
        std::vector<size_t> jumps;
        for (size_t i = 0; i < r.subs.size(); ++i) {
          size_t split = 0;
          if (i + 1 < r.subs.size()) split = Push({I::kSplit, Here() + 1, 0});
          if (!Emit(*r.subs[i])) return false;
          if (i + 1 < r.subs.size()) {
            jumps.push_back(Push({I::kJump}));
            p_->prog_[split].y = Here();
          }
        }
        for (size_t j : jumps) p_->prog_[j].x = Here();
        return true;
      }
      case Re::kRepeat: {
        const Re& body = *r.subs[0];
        for (size_t i = 0; i < r.min; ++i)
          if (!Emit(body)) return false;
        if (r.max == kInfinite) {
          size_t split = Push({I::kSplit, Here() + 1, 0});
          if (!Emit(body)) return false;
          Push({I::kJump, static_cast<uint32_t>(split), 0});
          p_->prog_[split].y = Here();
          return true;
        }
        std::vector<size_t> splits;
        for (size_t i = r.min; i < r.max; ++i) {
          splits.push_back(Push({I::kSplit, Here() + 1, 0}));
          if (!Emit(body)) return false;
        }
        for (size_t s : splits) p_->prog_[s].y = Here();
        return true;
      }
    }
    return false;
  }

  size_t Push(Pattern::Inst i) {
    p_->prog_.push_back(i);
    return p_->prog_.size() - 1;
  }
  uint32_t Here() const { return static_cast<uint32_t>(p_->prog_.size()); }

 private:
  Pattern* p_;
};

Result<std::unique_ptr<Pattern>> Pattern::Compile(std::string_view source) {
  Parser parser(source);
  KI_ASSIGN_OR_RETURN(RePtr tree, parser.Parse());
  auto p = std::unique_ptr<Pattern>(new Pattern);
  p->source_ = std::string(source);
  PatternCompiler c(p.get());
  if (!c.Emit(*tree) || p->prog_.size() > kMaxProgram)
    return Status::InvalidInput("pattern " + p->source_ + ": compiles to more than " +
                                std::to_string(kMaxProgram) + " states");
  c.Push({Inst::kMatch});
  p->anchored_ = p->prog_[0].op == Inst::kBegin;
  p->BuildDfa();
  return p;
}

std::vector<uint32_t> Pattern::Closure(const std::vector<uint32_t>& seeds, bool at_begin, bool at_end,
                                       bool* accept) const {
  std::vector<uint8_t> seen(prog_.size(), 0);
  std::vector<uint32_t> stack(seeds.rbegin(), seeds.rend()), out;
  while (!stack.empty()) {
    uint32_t at = stack.back();
    stack.pop_back();
    if (seen[at]) continue;
    seen[at] = 1;
    const Inst& in = prog_[at];
    switch (in.op) {
      case Inst::kByte: out.push_back(at); break;
      case Inst::kJump: stack.push_back(in.x); break;
      case Inst::kSplit:
        stack.push_back(in.y);
        stack.push_back(in.x);
        break;
      case Inst::kBegin:
        if (at_begin) stack.push_back(at + 1);
        break;
      case Inst::kEnd:
        if (at_end) stack.push_back(at + 1);
        else out.push_back(at);  // decided at the end of the subject
        break;
      case Inst::kMatch: *accept = true; break;
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Pattern::BuildDfa() {
  constexpr size_t kMaxStates = 4096;
  // Bytes no set tells apart share a class.
  classes_ = 1;
  for (const auto& set : sets_) {
    int remap[2][256];
    for (auto& r : remap)
      for (int& v : r) v = -1;
    int next = 0;
    uint8_t fresh[256];
    for (int b = 0; b < 256; ++b) {
      int& slot = remap[set.test(b) ? 1 : 0][class_of_[b]];
      if (slot < 0) slot = next++;
      fresh[b] = static_cast<uint8_t>(slot);
    }
    if (next > 255) return;  // more classes than a byte holds: NFA only
    std::copy(fresh, fresh + 256, class_of_);
    classes_ = next;
  }
  uint8_t rep[256];  // a byte of each class
  for (int b = 255; b >= 0; --b) rep[class_of_[b]] = static_cast<uint8_t>(b);

  std::map<std::vector<uint32_t>, int32_t> ids;
  std::vector<std::vector<uint32_t>> states;
  std::vector<uint8_t> accept;
  // A state is its NFA states and whether the match was reached on the
  // way in: the same states reached with and without it are two states.
  auto intern = [&](std::vector<uint32_t> set, bool acc) -> int32_t {
    if (set.empty() && !acc) return -1;
    std::vector<uint32_t> key = set;
    if (acc) key.push_back(UINT32_MAX);
    auto [it, fresh] = ids.try_emplace(std::move(key), int32_t(states.size()));
    if (fresh) {
      states.push_back(std::move(set));
      accept.push_back(acc);
    }
    return it->second;
  };
  bool acc = false;
  dfa_start_ = intern(Closure({0}, /*at_begin=*/true, /*at_end=*/false, &acc), acc);
  std::vector<int32_t> table;
  for (size_t i = 0; i < states.size(); ++i) {
    if (states.size() > kMaxStates) return;  // too large: NFA only
    table.resize((i + 1) * classes_, -1);
    for (int c = 0; c < classes_; ++c) {
      std::vector<uint32_t> seeds;
      for (uint32_t pc : states[i])
        if (prog_[pc].op == Inst::kByte && sets_[prog_[pc].x].test(rep[c])) seeds.push_back(pc + 1);
      if (!anchored_) seeds.push_back(0);  // a match may start at any byte
      bool a = false;
      std::vector<uint32_t> next = Closure(seeds, false, false, &a);
      table[i * classes_ + c] = intern(std::move(next), a);
    }
  }
  dfa_end_accept_.assign(states.size(), 0);
  for (size_t i = 0; i < states.size(); ++i) {
    std::vector<uint32_t> ends;
    for (uint32_t pc : states[i])
      if (prog_[pc].op == Inst::kEnd) ends.push_back(pc);
    bool a = accept[i];
    if (!ends.empty()) (void)Closure(ends, false, true, &a);
    dfa_end_accept_[i] = a;
  }
  dfa_ = std::move(table);
  dfa_accept_ = std::move(accept);
  has_dfa_ = dfa_start_ >= 0;
}

bool Pattern::Matches(std::string_view s) const {
  // The empty subject is the one place where ^ and $ hold at once.
  if (!has_dfa_ || s.empty()) return MatchesNfa(s);
  int32_t st = dfa_start_;
  if (dfa_accept_[st]) return true;
  for (unsigned char c : s) {
    st = dfa_[size_t(st) * classes_ + class_of_[c]];
    if (st < 0) return false;
    if (dfa_accept_[st]) return true;
  }
  return dfa_end_accept_[st] != 0;
}

// Simulates all threads in lock step: each state is visited at most once
// per subject position (the `mark` stamps), so the work is bounded by
// length x states, with an explicit stack instead of recursion.
bool Pattern::MatchesNfa(std::string_view s) const {
  const size_t n = prog_.size();
  std::vector<size_t> mark(n, std::numeric_limits<size_t>::max());
  std::vector<uint32_t> clist, nlist, stack;
  clist.reserve(n);
  nlist.reserve(n);
  // Adds the states reachable from pc without consuming a byte at `pos`;
  // true when one of them is the match.
  auto add = [&](std::vector<uint32_t>* list, uint32_t pc, size_t pos) {
    stack.push_back(pc);
    while (!stack.empty()) {
      uint32_t at = stack.back();
      stack.pop_back();
      if (mark[at] == pos) continue;
      mark[at] = pos;
      const Inst& in = prog_[at];
      switch (in.op) {
        case Inst::kByte: list->push_back(at); break;
        case Inst::kJump: stack.push_back(in.x); break;
        case Inst::kSplit:
          stack.push_back(in.y);
          stack.push_back(in.x);
          break;
        case Inst::kBegin:
          if (pos == 0) stack.push_back(at + 1);
          break;
        case Inst::kEnd:
          if (pos == s.size()) stack.push_back(at + 1);
          break;
        case Inst::kMatch: stack.clear(); return true;
      }
    }
    return false;
  };
  for (size_t pos = 0;; ++pos) {
    if ((!anchored_ || pos == 0) && add(&clist, 0, pos)) return true;
    if (clist.empty() && anchored_) return false;
    if (pos == s.size()) return false;
    const unsigned char c = static_cast<unsigned char>(s[pos]);
    nlist.clear();
    for (uint32_t pc : clist)
      if (sets_[prog_[pc].x].test(c) && add(&nlist, pc + 1, pos + 1)) return true;
    clist.swap(nlist);
  }
}

}  // namespace ki::schema
