// Output plumbing shared by the checkpoint writers (safetensors, GGUF): a file written under a
// temporary name and renamed into place only when complete, and the byte-counting sink that a
// tensor's fill callback writes through.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "core/status.h"
#include "loader/safetensors_writer.h"  // ByteSink, TensorFill

namespace g4::loader_internal {

// PATH.partial behind a large stdio buffer, renamed to PATH by Commit(); destroyed
// uncommitted, it deletes the partial file so a failed write leaves nothing behind.
class OutputFile {
 public:
  explicit OutputFile(std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  const std::string& path() const { return path_; }
  // Bytes written so far.
  uint64_t pos() const { return pos_; }

  Status Open();
  Status Write(const void* p, size_t n);
  // Writes zeros up to the next multiple of `alignment` (> 0).
  Status PadTo(uint64_t alignment);
  // Flushes, closes (where delayed write errors such as ENOSPC surface) and renames.
  Status Commit();

 private:
  std::string path_;
  std::string tmp_path_;
  FILE* file_ = nullptr;
  uint64_t pos_ = 0;
  bool committed_ = false;
};

// The sink handed to a fill callback: forwards to the file, refuses bytes past the tensor's
// size, and remembers its first error so a callback that ignores it cannot hide it.
// `context` (file and tensor) starts its error messages.
class TensorSink : public ByteSink {
 public:
  TensorSink(OutputFile* out, std::string context, uint64_t expected);

  Status Write(const void* p, size_t n) override;

  // The outcome of a fill that returned `filled`: the sink's first error, else the fill's
  // error in context, else an Internal error when fewer than the expected bytes came:
  // "<context>: fill wrote N of M bytes", or with `shortfall` in place of " of M bytes" (each
  // writer words it as its tests and users know it).
  Status Finish(const Status& filled, std::string_view shortfall = {}) const;

  const Status& error() const { return error_; }
  uint64_t written() const { return written_; }

 private:
  OutputFile* out_;
  std::string context_;
  uint64_t expected_;
  uint64_t written_ = 0;
  Status error_;
};

}  // namespace g4::loader_internal
