// Key files of manually keyed SAs: hex text, private to the owner. The key bytes are copied
// straight into a KeyMaterial and every intermediate buffer is wiped; no message quotes them.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "control/config/schema.hpp"

namespace ws::config::detail {

namespace {

constexpr size_t kMaxFileBytes = 4096;  // a key file is a line of hex, not a document

void wipe(void* p, size_t n) {
  volatile uint8_t* v = static_cast<volatile uint8_t*>(p);
  for (size_t i = 0; i < n; ++i) v[i] = 0;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Relative key paths are relative to the config file's directory, so a config and its keys
// can move together.
std::string resolve(const std::string& config_file, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  auto slash = config_file.rfind('/');
  if (slash == std::string::npos) return path;
  return config_file.substr(0, slash + 1) + path;
}

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Hex digits with any white space between them, into `out`; the count, or an error text.
std::optional<size_t> decode_hex(std::string_view text,
                                 std::array<uint8_t, 2 * ipsec::KeyMaterial::kMax>& out,
                                 std::string& why) {
  size_t n = 0;
  int high = -1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_space(text[i])) continue;
    int v = hex_value(text[i]);
    if (v < 0) {
      why = "holds a character that is not a hex digit (at byte " + std::to_string(i) + ")";
      return std::nullopt;
    }
    if (high < 0) {
      high = v;
      continue;
    }
    if (n == out.size()) {
      why = "holds more than " + std::to_string(out.size()) + " bytes of hex";
      return std::nullopt;
    }
    out[n++] = static_cast<uint8_t>(high << 4 | v);
    high = -1;
  }
  if (high >= 0) {
    why = "holds an odd number of hex digits";
    return std::nullopt;
  }
  return n;
}

}  // namespace

std::optional<ipsec::KeyMaterial> read_key_file(Diagnostics& d, const Value& at,
                                                const std::string& path, size_t expected_bytes,
                                                std::string_view what) {
  const std::string file = resolve(d.file(), path);
  auto fail = [&](const std::string& why) {
    d.error(at.pos, at.path + ": key file '" + file + "' " + why);
    return std::nullopt;
  };
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::string("cannot be read: ") + std::strerror(errno));
  struct stat st {};
  std::array<char, kMaxFileBytes + 1> text{};
  ssize_t got = -1;
  std::string why;
  if (::fstat(fd, &st) != 0) {
    why = std::string("cannot be read: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "is not a regular file";
  } else if ((st.st_mode & 077) != 0) {
    why = "has permissions " + octal_mode(st.st_mode) +
          ", which are too open: a key must not be accessible by group or others (chmod 600)";
  } else {
    got = ::read(fd, text.data(), text.size());
    if (got < 0) why = std::string("cannot be read: ") + std::strerror(errno);
    if (got > static_cast<ssize_t>(kMaxFileBytes)) {
      why = "is larger than " + std::to_string(kMaxFileBytes) + " bytes";
    }
  }
  ::close(fd);
  if (!why.empty()) {
    wipe(text.data(), text.size());
    return fail(why);
  }
  std::array<uint8_t, 2 * ipsec::KeyMaterial::kMax> bytes{};
  auto n = decode_hex(std::string_view(text.data(), static_cast<size_t>(got)), bytes, why);
  wipe(text.data(), text.size());
  std::optional<ipsec::KeyMaterial> key;
  if (n && *n != expected_bytes) {
    why = "holds " + std::to_string(*n) + " bytes; " + std::string(what) + " needs " +
          std::to_string(expected_bytes);
  } else if (n) {
    key.emplace(std::span<const uint8_t>(bytes.data(), *n));
  }
  wipe(bytes.data(), bytes.size());
  if (!key) return fail(why);
  return key;
}

}  // namespace ws::config::detail
