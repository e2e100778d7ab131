// MappedFile: open + fstat + mmap, closing the descriptor once the mapping exists (the
// mapping keeps the file alive on its own).
#include "loader/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

#include "loader/loader_util.h"

namespace g4 {
namespace {

using loader_internal::ErrnoText;

// Closes a descriptor on every return path of Open().
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

int OpenReadOnly(const std::string& path) {
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = OpenReadOnly(path);
  if (fd < 0) {
    const int err = errno;
    std::string msg = path + ": cannot open: " + ErrnoText(err);
    return err == ENOENT ? NotFound(std::move(msg)) : IoError(std::move(msg));
  }
  FdCloser closer(fd);

  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError(path + ": cannot stat: " + ErrnoText(errno));
  if (!S_ISREG(st.st_mode)) return IoError(path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > SIZE_MAX) {
    return IoError(path + ": file of " + std::to_string(st.st_size) +
                   " bytes is too large to map");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) return std::unique_ptr<MappedFile>(new MappedFile(path, nullptr, 0));

  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED) {
    return IoError(path + ": cannot mmap " + std::to_string(size) + " bytes: " + ErrnoText(errno));
  }
  return std::unique_ptr<MappedFile>(new MappedFile(path, addr, size));
}

MappedFile::~MappedFile() {
  if (addr_ != nullptr) ::munmap(addr_, size_);
}

}  // namespace g4
