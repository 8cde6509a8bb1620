#include "stack/apps/iperf3_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace ws::iperf3 {

using Type = JsonValue::Type;

// Recursive descent over RFC 8259's grammar; depth is bounded by the limits, so the
// recursion is too.
class JsonDoc::Parser {
 public:
  Parser(JsonDoc& d, std::string_view t, const JsonLimits& l) : doc_(d), s_(t), lim_(l) {}

  bool run() {
    skip_ws();
    uint32_t root = 0;
    if (!value(0, root)) return false;
    skip_ws();
    if (pos_ != s_.size()) return fail("trailing characters after the document");
    return true;
  }

 private:
  bool fail(const char* why) {
    doc_.error_ = why;
    return false;
  }
  void skip_ws() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool new_node(Type t, uint32_t& idx) {
    if (doc_.nodes_.size() >= lim_.max_nodes) return fail("too many values");
    idx = static_cast<uint32_t>(doc_.nodes_.size());
    doc_.nodes_.emplace_back();
    doc_.nodes_[idx].type = t;
    return true;
  }
  bool literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return fail("invalid literal");
    pos_ += word.size();
    return true;
  }

  bool value(size_t depth, uint32_t& idx) {
    if (depth > lim_.max_depth) return fail("nesting too deep");
    if (pos_ >= s_.size()) return fail("unexpected end of input");
    const char c = s_[pos_];
    switch (c) {
      case '{':
        return object(depth, idx);
      case '[':
        return array(depth, idx);
      case '"': {
        uint32_t off = 0, len = 0;
        if (!string(off, len) || !new_node(Type::kString, idx)) return false;
        doc_.nodes_[idx].str_off = off;
        doc_.nodes_[idx].str_len = len;
        return true;
      }
      case 't':
        if (!literal("true") || !new_node(Type::kBool, idx)) return false;
        doc_.nodes_[idx].boolean = true;
        return true;
      case 'f':
        return literal("false") && new_node(Type::kBool, idx);
      case 'n':
        return literal("null") && new_node(Type::kNull, idx);
      default:
        return number(idx);
    }
  }

  // RFC 8259 section 6: -? int frac? exp?, checked strictly, then converted.
  bool number(uint32_t& idx) {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    auto digits = [&] {
      size_t n = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_, ++n;
      return n;
    };
    const size_t int_start = pos_;
    const size_t int_digits = digits();
    if (int_digits == 0) return fail("invalid value");
    if (int_digits > 1 && s_[int_start] == '0') return fail("leading zero in a number");
    if (pos_ < s_.size() && s_[pos_] == '.') {
      ++pos_;
      if (digits() == 0) return fail("digits expected after the decimal point");
    }
    if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
      if (digits() == 0) return fail("digits expected in the exponent");
    }
    double v = 0;
    const char* b = s_.data() + start;
    auto r = std::from_chars(b, s_.data() + pos_, v);
    // Out of range (e.g. 1e999) keeps the strictly valid text but not the value.
    if (r.ec == std::errc::result_out_of_range) v = 0;
    if (!new_node(Type::kNumber, idx)) return false;
    doc_.nodes_[idx].num = v;
    return true;
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(uint32_t& cp) {
    if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
    cp = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(s_[pos_++]);
      if (h < 0) return fail("invalid \\u escape");
      cp = cp << 4 | static_cast<uint32_t>(h);
    }
    return true;
  }
  void utf8(uint32_t cp) {
    std::string& a = doc_.arena_;
    if (cp < 0x80) {
      a.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      a.push_back(static_cast<char>(0xc0 | cp >> 6));
      a.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
      a.push_back(static_cast<char>(0xe0 | cp >> 12));
      a.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3f)));
      a.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    } else {
      a.push_back(static_cast<char>(0xf0 | cp >> 18));
      a.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3f)));
      a.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3f)));
      a.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    }
  }

  // A string token, decoded into the arena (RFC 8259 section 7). A decoded string is
  // never longer than its source, so the arena reserved at the input size never grows.
  bool string(uint32_t& off, uint32_t& len) {
    ++pos_;  // opening quote
    off = static_cast<uint32_t>(doc_.arena_.size());
    while (true) {
      if (pos_ >= s_.size()) return fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        doc_.arena_.push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          doc_.arena_.push_back(e);
          break;
        case 'b':
          doc_.arena_.push_back('\b');
          break;
        case 'f':
          doc_.arena_.push_back('\f');
          break;
        case 'n':
          doc_.arena_.push_back('\n');
          break;
        case 'r':
          doc_.arena_.push_back('\r');
          break;
        case 't':
          doc_.arena_.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          // A surrogate pair encodes one code point above U+FFFF; a lone surrogate
          // becomes U+FFFD rather than an error (as lenient readers do).
          if (cp >= 0xd800 && cp < 0xdc00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t lo = 0;
            if (!hex4(lo)) return false;
            cp = (lo >= 0xdc00 && lo < 0xe000) ? 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00)
                                               : 0xfffd;
          } else if (cp >= 0xd800 && cp < 0xe000) {
            cp = 0xfffd;
          }
          utf8(cp);
          break;
        }
        default:
          return fail("invalid escape");
      }
    }
    len = static_cast<uint32_t>(doc_.arena_.size() - off);
    return true;
  }

  bool object(size_t depth, uint32_t& idx) {
    ++pos_;
    if (!new_node(Type::kObject, idx)) return false;
    uint32_t last = 0;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != '"') return fail("member name expected");
      uint32_t koff = 0, klen = 0;
      if (!string(koff, klen)) return false;
      skip_ws();
      if (pos_ >= s_.size() || s_[pos_] != ':') return fail("':' expected");
      ++pos_;
      skip_ws();
      uint32_t child = 0;
      if (!value(depth + 1, child)) return false;
      doc_.nodes_[child].key_off = koff;
      doc_.nodes_[child].key_len = klen;
      link(idx, last, child);
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("',' or '}' expected");
    }
  }

  bool array(size_t depth, uint32_t& idx) {
    ++pos_;
    if (!new_node(Type::kArray, idx)) return false;
    uint32_t last = 0;
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      uint32_t child = 0;
      if (!value(depth + 1, child)) return false;
      link(idx, last, child);
      skip_ws();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("',' or ']' expected");
    }
  }

  void link(uint32_t parent, uint32_t& last, uint32_t child) {
    auto& n = doc_.nodes_;
    if (last == 0) {
      n[parent].first = child;
    } else {
      n[last].next = child;
    }
    last = child;
    ++n[parent].count;
  }

  JsonDoc& doc_;
  std::string_view s_;
  const JsonLimits& lim_;
  size_t pos_ = 0;
};

bool JsonDoc::parse(std::string_view text, const JsonLimits& lim) {
  nodes_.clear();
  arena_.clear();
  error_ = nullptr;
  if (text.size() > lim.max_bytes) {
    error_ = "document too large";
    return false;
  }
  // Every value takes at least one byte of input, so this bounds the node array too.
  nodes_.reserve(std::min(lim.max_nodes, text.size() + 1));
  arena_.reserve(text.size());
  Parser p(*this, text, lim);
  if (!p.run()) {
    nodes_.clear();
    return false;
  }
  return true;
}

JsonValue JsonDoc::root() const { return nodes_.empty() ? JsonValue() : JsonValue(this, 0); }

JsonValue::Type JsonValue::type() const {
  return doc_ == nullptr ? Type::kNone : doc_->nodes_[idx_].type;
}

JsonValue JsonValue::operator[](std::string_view key) const {
  if (!is_object()) return {};
  for (JsonValue v = first(); v.valid(); v = v.next()) {
    if (v.key() == key) return v;
  }
  return {};
}

JsonValue JsonValue::first() const {
  if (doc_ == nullptr) return {};
  const auto& n = doc_->nodes_[idx_];
  if ((n.type != Type::kArray && n.type != Type::kObject) || n.first == 0) return {};
  return {doc_, n.first};
}

JsonValue JsonValue::next() const {
  if (doc_ == nullptr) return {};
  const uint32_t nx = doc_->nodes_[idx_].next;
  return nx == 0 ? JsonValue() : JsonValue(doc_, nx);
}

size_t JsonValue::size() const { return doc_ == nullptr ? 0 : doc_->nodes_[idx_].count; }

double JsonValue::number(double fallback) const {
  return is_number() ? doc_->nodes_[idx_].num : fallback;
}

bool JsonValue::truthy() const {
  if (type() == Type::kBool) return doc_->nodes_[idx_].boolean;
  if (is_number()) return doc_->nodes_[idx_].num != 0;
  return false;
}

std::string_view JsonValue::string(std::string_view fallback) const {
  if (type() != Type::kString) return fallback;
  const auto& n = doc_->nodes_[idx_];
  return std::string_view(doc_->arena_).substr(n.str_off, n.str_len);
}

std::string_view JsonValue::key() const {
  if (doc_ == nullptr) return {};
  const auto& n = doc_->nodes_[idx_];
  return std::string_view(doc_->arena_).substr(n.key_off, n.key_len);
}

// ---- writer ----

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (depth_ > 0 && depth_ <= std::size(need_comma_)) {
    if (need_comma_[depth_ - 1]) out_.push_back(',');
    need_comma_[depth_ - 1] = true;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_.push_back('{');
  if (++depth_ <= std::size(need_comma_)) need_comma_[depth_ - 1] = false;
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_.push_back('}');
  if (depth_ > 0) --depth_;
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_.push_back('[');
  if (++depth_ <= std::size(need_comma_)) need_comma_[depth_ - 1] = false;
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_.push_back(']');
  if (depth_ > 0) --depth_;
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  separate();
  quoted(k);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(int64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(double v) {
  separate();
  if (!std::isfinite(v)) v = 0;
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(bool v) {
  separate();
  out_.append(v ? "true" : "false");
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view v) {
  separate();
  quoted(v);
  return *this;
}

void JsonWriter::quoted(std::string_view s) {
  out_.push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out_.append("\\\"");
        break;
      case '\\':
        out_.append("\\\\");
        break;
      case '\n':
        out_.append("\\n");
        break;
      case '\r':
        out_.append("\\r");
        break;
      case '\t':
        out_.append("\\t");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out_.append(buf);
        } else {
          out_.push_back(c);
        }
    }
  }
  out_.push_back('"');
}

}  // namespace ws::iperf3
