// Strict JSON parsing (nlohmann, through its SAX interface) and the
// format-dispatching entry points of include/ki/json.h.
//
// nlohmann's DOM parser keeps the last of duplicate keys and reports no
// position for them, so we build the DOM ourselves from SAX events and reject
// a duplicate as soon as its key is read. SAX events carry no offsets: the
// input iterator records how far the lexer has read, which at a key event is
// just past the key's closing quote.
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "json/parse_internal.h"
#include "util/utf8.h"

namespace ki {
namespace json_internal {

std::string ErrorAtLineCol(std::string_view source, int line0, int col0, std::string_view msg) {
  std::string out(source);
  out += ':' + std::to_string(line0 + 1) + ':' + std::to_string(col0 + 1) + ": ";
  out += msg;
  return out;
}

std::string ErrorAt(std::string_view source, std::string_view text, size_t offset,
                    std::string_view msg) {
  if (offset > text.size()) offset = text.size();
  int line = 0, col = 0;
  for (size_t i = 0; i < offset; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      col = 0;
    } else if ((c & 0xC0) != 0x80) {
      ++col;
    }
  }
  return ErrorAtLineCol(source, line, col, msg);
}

namespace {

// An input iterator over the text that publishes how far it has advanced.
class TrackingIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  TrackingIterator(const char* p, const char** high_water) : p_(p), hw_(high_water) {}
  reference operator*() const { return *p_; }
  TrackingIterator& operator++() {
    ++p_;
    *hw_ = p_;
    return *this;
  }
  TrackingIterator operator++(int) {
    TrackingIterator old = *this;
    ++*this;
    return old;
  }
  bool operator==(const TrackingIterator& o) const { return p_ == o.p_; }

 private:
  const char* p_;
  const char** hw_;
};

class StrictDomBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  StrictDomBuilder(std::string_view text, std::string_view source, const ParseLimits& limits,
                   const char** high_water)
      : text_(text), source_(source), limits_(limits), hw_(high_water) {}

  bool null() { return Put(Json(nullptr)); }
  bool boolean(bool v) { return Put(Json(v)); }
  bool number_integer(number_integer_t v) { return Put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return Put(Json(v)); }
  bool number_float(number_float_t v, const string_t& raw) {
    // The lexer only produces finite numbers from valid JSON, except when a
    // literal overflows a double (1e400): that would be Infinity.
    if (!std::isfinite(v)) return Fail(Offset() - raw.size(), "number " + raw + " is out of range (Infinity is not allowed)");
    return Put(Json(v));
  }
  bool string(string_t& v) { return Put(Json(std::move(v))); }
  bool binary(binary_t&) { return Fail(Offset(), "binary values are not JSON"); }

  bool start_object(std::size_t) { return Open(Json::value_t::object); }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) { return Open(Json::value_t::array); }
  bool end_array() {
    stack_.pop_back();
    return true;
  }

  bool key(string_t& k) {
    Json& obj = *stack_.back();
    auto [it, inserted] = obj.get_ref<Json::object_t&>().try_emplace(k);
    if (!inserted) return Fail(KeyStart(), "duplicate key \"" + k + "\"");
    pending_ = &it->second;
    return true;
  }

  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) {
    if (!error_.empty()) return false;  // our own failure already recorded
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line
    // L, column C: <what>"; keep <what>, our position replaces its own.
    std::string what = ex.what();
    if (ex.id == 406) {  // out_of_range.406: a literal beyond the double range
      what = "number out of range (Infinity is not allowed)";
    } else {
      size_t col = what.find("column ");
      size_t colon = col == std::string::npos ? std::string::npos : what.find(": ", col);
      if (colon != std::string::npos) {
        what = what.substr(colon + 2);
      } else if (size_t tag = what.find("] "); tag != std::string::npos) {
        what = what.substr(tag + 2);  // "[json.exception.x.n] " prefix
      }
    }
    // nlohmann quotes the token it gave up on ("last read: '...'"): input
    // bytes, which may be ill-formed UTF-8 (then every JSON dump of the
    // message threw: `--json` output, a DSSE report; found by fuzz_dsse)
    // and as long as the input.
    what = Utf8Printable(what, 300);
    // `position` counts the bytes read: point at the last one, where the
    // lexer gave up (the end of the offending token).
    error_ = ErrorAt(source_, text_, position == 0 ? 0 : position - 1, what);
    return false;
  }

  Json TakeRoot() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  size_t Offset() const { return static_cast<size_t>(*hw_ - text_.data()); }

  // The opening quote of the key just read (the lexer stopped after its
  // closing quote; skip back over escaped quotes inside it).
  size_t KeyStart() const {
    size_t close = Offset() - 1;
    for (size_t j = close; j-- > 0;) {
      if (text_[j] != '"') continue;
      size_t bs = 0;
      while (j >= bs + 1 && text_[j - bs - 1] == '\\') ++bs;
      if (bs % 2 == 0) return j;
    }
    return close;
  }

  bool Fail(size_t offset, const std::string& msg) {
    if (error_.empty()) error_ = ErrorAt(source_, text_, offset, msg);
    return false;
  }

  Json* Slot() {
    if (stack_.empty()) return &root_;
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.get_ref<Json::array_t&>().emplace_back();
      return &top.get_ref<Json::array_t&>().back();
    }
    return pending_;
  }

  bool Put(Json&& v) {
    *Slot() = std::move(v);
    return true;
  }

  bool Open(Json::value_t t) {
    if (static_cast<int>(stack_.size()) >= limits_.max_depth)
      return Fail(Offset() - 1, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    Json* slot = Slot();
    *slot = Json(t);
    stack_.push_back(slot);
    return true;
  }

  std::string_view text_;
  std::string_view source_;
  const ParseLimits& limits_;
  const char** hw_;
  Json root_;
  std::vector<Json*> stack_;
  Json* pending_ = nullptr;
  std::string error_;
};

}  // namespace

Result<Json> ParseJson(std::string_view text, std::string_view source, const ParseLimits& limits) {
  const char* high_water = text.data();
  StrictDomBuilder builder(text, source, limits, &high_water);
  TrackingIterator first(text.data(), &high_water), last(text.data() + text.size(), &high_water);
  bool ok = false;
  try {
    ok = Json::sax_parse(first, last, &builder, Json::input_format_t::json, /*strict=*/true,
                         /*ignore_comments=*/false);
  } catch (const std::exception& e) {  // allocation failure and the like
    return Status::InvalidInput(ErrorAt(source, text, high_water - text.data(), e.what()));
  }
  if (!ok) {
    std::string msg = builder.error();
    if (msg.empty()) msg = ErrorAt(source, text, high_water - text.data(), "invalid JSON");
    return Status::InvalidInput(std::move(msg));
  }
  return builder.TakeRoot();
}

}  // namespace json_internal

namespace {

Status CheckSize(std::string_view text, std::string_view source, const ParseLimits& limits) {
  if (text.size() > limits.max_bytes)
    return Status::InvalidInput(std::string(source) + ": document is " + std::to_string(text.size()) +
                                " bytes, over the limit of " + std::to_string(limits.max_bytes));
  return Status::OK();
}

}  // namespace

DocFormat DetectFormat(std::string_view text) {
  size_t i = 0;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 byte order mark
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return (c == '{' || c == '[') ? DocFormat::kJson : DocFormat::kYaml;
  }
  return DocFormat::kYaml;
}

Result<Json> ParseDocument(std::string_view text, DocFormat format, std::string_view source,
                           const ParseLimits& limits) {
  KI_RETURN_IF_ERROR(CheckSize(text, source, limits));
  if (format == DocFormat::kAuto) format = DetectFormat(text);
  if (format == DocFormat::kJson) return json_internal::ParseJson(text, source, limits);
  KI_ASSIGN_OR_RETURN(auto docs, json_internal::ParseYaml(text, source, limits));
  if (docs.empty()) return Status::InvalidInput(std::string(source) + ": no YAML document");
  if (docs.size() > 1)
    return Status::InvalidInput(std::string(source) + ": expected one YAML document, found " +
                                std::to_string(docs.size()));
  return std::move(docs.front());
}

Result<std::vector<Json>> ParseDocuments(std::string_view text, DocFormat format,
                                         std::string_view source, const ParseLimits& limits) {
  KI_RETURN_IF_ERROR(CheckSize(text, source, limits));
  if (format == DocFormat::kAuto) format = DetectFormat(text);
  if (format == DocFormat::kJson) {
    KI_ASSIGN_OR_RETURN(auto doc, json_internal::ParseJson(text, source, limits));
    std::vector<Json> docs;
    docs.push_back(std::move(doc));
    return docs;
  }
  return json_internal::ParseYaml(text, source, limits);
}

}  // namespace ki
