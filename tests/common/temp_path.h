// Scratch paths for tests. ctest runs each test of a binary as its own process, several at
// once, so a fixed name under TempDir() would be written by several processes at the same time
// (one test then reads another's half-written checkpoint). ProcessTempPath(name) is unique to
// this process (the pid goes before the extension: "x.gguf" -> "x_123.gguf") and removed when
// it exits. ScopedTempDir is a fresh directory (mkdtemp: unique across processes too), deleted
// with its contents at scope exit.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

namespace g4::testing {

inline std::filesystem::path ProcessTempPath(const std::string& name) {
  struct Registry {
    std::mutex mu;
    std::vector<std::filesystem::path> paths;
    ~Registry() {
      std::error_code ec;
      for (const auto& p : paths) std::filesystem::remove_all(p, ec);
    }
  };
  static Registry registry;
  const std::filesystem::path n(name);
  std::filesystem::path p =
      std::filesystem::path(::testing::TempDir()) /
      (n.stem().string() + "_" + std::to_string(getpid()) + n.extension().string());
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.paths.push_back(p);
  return p;
}

// A fresh directory under testing::TempDir(), deleted with its contents at scope exit.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base += '/';
    std::string tmpl = base + "g4_test_XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~ScopedTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace g4::testing
