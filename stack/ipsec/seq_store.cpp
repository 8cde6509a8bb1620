#include "stack/ipsec/seq_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace ws::ipsec {

namespace {

constexpr std::string_view kHeader = "wirespeed esp sequence v1\nnext ";

std::string sys_error(const std::string& what, const std::string& file) {
  return what + " '" + file + "': " + std::strerror(errno);
}

bool write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    s.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Atomically replaces the record: a temporary file, fsynced, renamed over the old one, then
// the directory fsynced so that the rename itself survives a crash.
bool persist(const std::string& dir, const std::string& file, uint64_t next, std::string& error) {
  const std::string tmp = file + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = sys_error("cannot create", tmp);
    return false;
  }
  const std::string text = std::string(kHeader) + std::to_string(next) + "\n";
  bool ok = write_all(fd, text) && ::fsync(fd) == 0;
  if (!ok) error = sys_error("cannot write", tmp);
  ::close(fd);
  if (ok && ::rename(tmp.c_str(), file.c_str()) != 0) {
    error = sys_error("cannot rename onto", file);
    ok = false;
  }
  if (!ok) return false;
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0 || ::fsync(dfd) != 0) {
    error = sys_error("cannot sync the directory", dir);
    ok = false;
  }
  if (dfd >= 0) ::close(dfd);
  return ok;
}

// The recorded next number; 1 when there is no record yet.
bool load(const std::string& file, uint64_t& next, std::string& error) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) {
      next = 1;
      return true;
    }
    error = sys_error("cannot read", file);
    return false;
  }
  char buf[128];
  ssize_t n = ::read(fd, buf, sizeof buf);
  const int read_errno = errno;
  ::close(fd);
  if (n < 0) {
    errno = read_errno;
    error = sys_error("cannot read", file);
    return false;
  }
  std::string_view text(buf, static_cast<size_t>(n));
  const char* end = text.data() + text.size();
  if (text.size() < kHeader.size() + 2 || text.substr(0, kHeader.size()) != kHeader ||
      text.back() != '\n') {
    error = "'" + file + "' is not a sequence record; the SA stays stopped (never restarting at 1)";
    return false;
  }
  auto [p, ec] = std::from_chars(text.data() + kHeader.size(), end - 1, next);
  if (ec != std::errc() || p != end - 1 || next == 0) {
    error = "'" + file + "' holds no valid next number; the SA stays stopped";
    return false;
  }
  return true;
}

}  // namespace

std::string SeqStore::path(const SeqRecordId& id) const {
  char name[64];
  std::snprintf(name, sizeof name, "out-%08x-%s.seq", id.spi, id.remote.to_string().c_str());
  return dir_ + "/" + name;
}

bool SeqStore::reserve(const SeqRecordId& id, OutboundSequence& seq, uint64_t next,
                       uint64_t block_start, std::string& error) const {
  const uint64_t limit = seq.limit();
  const uint64_t end = limit - block_start < block_ ? limit : block_start + block_;
  if (!persist(dir_, path(id), end, error)) return false;
  seq.grant(next, end);
  return true;
}

bool SeqStore::start(const SeqRecordId& id, OutboundSequence& seq, std::string& error) const {
  uint64_t next = 0;
  if (!load(path(id), next, error)) return false;
  if (next >= seq.limit()) {
    seq.grant(next, next);  // exhausted before we began: the SA sends nothing
    return true;
  }
  return reserve(id, seq, next, next, error);
}

bool SeqStore::refill(const SeqRecordId& id, OutboundSequence& seq, std::string& error) const {
  if (!seq.wants_more()) return true;
  return reserve(id, seq, seq.next(), seq.reserved_end(), error);
}

}  // namespace ws::ipsec
