// Reading a config document (src/config/schema.hpp says what lives where): the file's text, at
// most kMaxConfigBytes, and a strict JSON parse. nlohmann::json's own parser keeps the last of
// two equal keys and reads 1e-400 as 0; this one builds the same document through its SAX
// interface and refuses both, naming the key (docs/design.md §12, "Config input").
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "schema.hpp"

namespace zt::config::detail {
namespace {

// The dotted path of a value: the keys of the objects it is in ("zo.eps"; an array element
// adds "[i]").
struct Level {
  Json* node;
  std::string key;   // the key whose value is being read (objects)
  std::size_t index = 0;  // the next element (arrays)
};

class StrictSax {
 public:
  explicit StrictSax(std::string origin) : origin_(std::move(origin)) {}

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool b) { return put(Json(b)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string& text) {
    // A literal with a nonzero digit before its exponent is not zero.
    const std::string mantissa = text.substr(0, text.find_first_of("eE"));
    const bool nonzero = mantissa.find_first_of("123456789") != std::string::npos;
    if (nonzero && (v == 0 || std::fabs(v) < DBL_MIN)) {
      refuse_at("the number " + text + " is too small for a double (it would read as " +
             (v == 0 ? std::string("0") : std::string("a subnormal")) +
             "); write 0 or a value of at least 2.2e-308 in magnitude");
    }
    return put(Json(v));
  }
  bool string(std::string& s) { return put(Json(std::move(s))); }
  bool binary(Json::binary_t&) { return false; }  // not produced by the JSON reader
  bool start_object(std::size_t) {
    Json* o = place(Json::object());
    stack_.push_back(Level{o, {}});
    return true;
  }
  bool key(std::string& k) {
    Level& top = stack_.back();
    top.key = k;
    if (top.node->contains(k)) {
      const bool section = top.node->at(k).is_object();
      refuse(std::string(section ? "section" : "key") + " '" + path() + "' appears twice (JSON " +
             "objects take each key once; merge the two" + (section ? " sections" : " values") + ")");
    }
    return true;
  }
  bool end_object() {
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    Json* a = place(Json::array());
    stack_.push_back(Level{a, {}});
    return true;
  }
  bool end_array() {
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t byte, const std::string& token,
                   const nlohmann::detail::exception& e) {
    if (e.id == 406) {  // nlohmann's out_of_range 406: a number beyond a double (1e999)
      refuse_at("the number " + token + " is beyond the range of a double (at most 1.8e308)");
    }
    syntax_byte_ = byte;
    syntax_what_ = e.what();
    return false;
  }

  Json& root() { return root_; }
  std::size_t syntax_byte() const { return syntax_byte_; }
  const std::string& syntax_what() const { return syntax_what_; }

 private:
  [[noreturn]] void refuse(const std::string& what) const { throw Error(origin_ + ": " + what); }
  // An error about the value being read, naming its key.
  [[noreturn]] void refuse_at(const std::string& what) const {
    refuse(stack_.empty() ? what : "key '" + path() + "': " + what);
  }

  std::string path() const {
    std::string p;
    for (const Level& l : stack_) {
      if (l.node->is_array()) {
        p += "[" + std::to_string(l.index == 0 ? 0 : l.index - 1) + "]";
      } else if (!l.key.empty()) {
        p += (p.empty() ? "" : ".") + l.key;
      }
    }
    return p;
  }

  // Puts `v` where the parser is: the document, the current key's value or the next element.
  Json* place(Json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    Level& top = stack_.back();
    if (top.node->is_array()) {
      ++top.index;
      top.node->push_back(std::move(v));
      return &top.node->back();
    }
    Json& slot = (*top.node)[top.key];
    slot = std::move(v);
    return &slot;
  }
  bool put(Json v) {
    place(std::move(v));
    return true;
  }

  std::string origin_;
  Json root_;
  std::vector<Level> stack_;
  std::size_t syntax_byte_ = 0;
  std::string syntax_what_;
};

}  // namespace

std::string read_config_text(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(path + ": is a directory, expected a JSON config file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open config file: " + std::strerror(errno));
  // A bounded read, not the file's size: devices (/dev/zero) and pipes report 0.
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) throw Error(path + ": read error");
  const auto got = static_cast<std::size_t>(in.gcount());
  if (got > kMaxConfigBytes) {
    throw Error(path + ": larger than " + std::to_string(kMaxConfigBytes >> 20) +
                " MiB, not a config file (a config is at most 1 MiB of JSON)");
  }
  text.resize(got);
  return text;
}

Json parse_document(const std::string& text, const std::string& origin, bool* syntax_error) {
  StrictSax sax(origin);
  const bool ok = Json::sax_parse(text, &sax, Json::input_format_t::json, /*strict=*/true,
                                  /*ignore_comments=*/true);
  if (ok) return std::move(sax.root());
  if (syntax_error) {
    *syntax_error = true;
    return Json();
  }
  // byte is 1-based; turn it into line and column for the message.
  const std::size_t byte = sax.syntax_byte();
  std::size_t line = 1, col = 1;
  const std::size_t end = std::min<std::size_t>(byte > 0 ? byte - 1 : 0, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  std::string detail = sax.syntax_what();
  // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: ".
  if (const auto p = detail.find(": "); p != std::string::npos) detail = detail.substr(p + 2);
  throw Error(origin + ": malformed JSON at line " + std::to_string(line) + ", column " +
              std::to_string(col) + " (byte " + std::to_string(byte) + "): " + detail);
}

}  // namespace zt::config::detail
