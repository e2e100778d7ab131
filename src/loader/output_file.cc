// OutputFile and TensorSink: see output_file.h.
#include "loader/output_file.h"

#include <algorithm>
#include <cerrno>
#include <utility>

#include "loader/loader_util.h"

namespace g4::loader_internal {
namespace {

constexpr size_t kWriteBufferBytes = size_t{1} << 20;

}  // namespace

OutputFile::OutputFile(std::string path) : path_(std::move(path)), tmp_path_(path_ + ".partial") {}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(tmp_path_.c_str());
}

Status OutputFile::Open() {
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    return IoError(path_ + ": cannot create " + tmp_path_ + ": " + ErrnoText(errno));
  }
  std::setvbuf(file_, nullptr, _IOFBF, kWriteBufferBytes);
  return Status::Ok();
}

Status OutputFile::Write(const void* p, size_t n) {
  if (n != 0 && std::fwrite(p, 1, n, file_) != n) {
    return IoError(path_ + ": write failed: " + ErrnoText(errno));
  }
  pos_ += n;
  return Status::Ok();
}

Status OutputFile::PadTo(uint64_t alignment) {
  static const char kZeros[256] = {};
  uint64_t pad = (alignment - pos_ % alignment) % alignment;
  while (pad > 0) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(pad, sizeof(kZeros)));
    G4_RETURN_IF_ERROR(Write(kZeros, n));
    pad -= n;
  }
  return Status::Ok();
}

Status OutputFile::Commit() {
  FILE* f = std::exchange(file_, nullptr);
  if (std::fclose(f) != 0) return IoError(path_ + ": write failed on close: " + ErrnoText(errno));
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return IoError(path_ + ": cannot rename " + tmp_path_ + " into place: " + ErrnoText(errno));
  }
  committed_ = true;
  return Status::Ok();
}

TensorSink::TensorSink(OutputFile* out, std::string context, uint64_t expected)
    : out_(out), context_(std::move(context)), expected_(expected) {}

Status TensorSink::Write(const void* p, size_t n) {
  if (!error_.ok()) return error_;
  if (n > expected_ - written_) {
    error_ = Internal(context_ + ": fill wrote more than the tensor's " +
                      std::to_string(expected_) + " bytes");
    return error_;
  }
  error_ = out_->Write(p, n);
  if (error_.ok()) written_ += n;
  return error_;
}

Status TensorSink::Finish(const Status& filled, std::string_view shortfall) const {
  if (!error_.ok()) return error_;
  if (!filled.ok()) return filled.WithContext(context_);
  if (written_ == expected_) return Status::Ok();
  std::string message = context_ + ": fill wrote " + std::to_string(written_);
  if (shortfall.empty()) {
    message += " of " + std::to_string(expected_) + " bytes";
  } else {
    message += shortfall;
  }
  return Internal(message);
}

}  // namespace g4::loader_internal
