#include "sim/core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cs {
namespace {

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Limits are whole MiB (the trace's is 2 GiB less one byte, shown as 2048 MiB), or small in tests.
std::string size_text(std::uint64_t bytes) {
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  if (bytes < kMiB) return std::to_string(bytes) + " bytes";
  return std::to_string((bytes + kMiB - 1) / kMiB) + " MiB";
}

// Closes the descriptor on every path out.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

InputFile read_input_file(const std::string& path, std::uint64_t max_bytes,
                          const std::string& what) {
  InputFile file;
  const Fd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    file.error = path + ": cannot open (" + std::strerror(errno) + ")";
    return file;
  }
  file.opened = true;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    file.error = path + ": cannot read its type (" + std::strerror(errno) + ")";
    return file;
  }
  if (!S_ISREG(st.st_mode)) {
    file.error = path + ": is " + kind_of(st.st_mode) + ", not a regular file; give the " + what +
                 " as a file";
    return file;
  }
  const auto too_big = [&] {
    return path + ": larger than the " + size_text(max_bytes) + " a " + what + " may have";
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    file.error = too_big();
    return file;
  }
  // The size is a hint only: read to the end, but never past the limit.
  file.bytes.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      file.error = path + ": cannot be read (" + std::strerror(errno) + ")";
      file.bytes.clear();
      return file;
    }
    if (file.bytes.size() + static_cast<std::uint64_t>(n) > max_bytes) {
      file.error = too_big();
      file.bytes.clear();
      return file;
    }
    file.bytes.append(chunk, static_cast<std::size_t>(n));
  }
  return file;
}

bool input_path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace cs
