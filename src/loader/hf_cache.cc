#include "loader/hf_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace g4 {

namespace fs = std::filesystem;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool IsRepoPart(const std::string& s) {
  if (s.empty() || s.size() > 96 || s[0] == '.' || s[0] == '-') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

// A file name inside a snapshot: relative, without "." or ".." parts (it must not leave it).
bool IsSnapshotRelative(const std::string& file) {
  if (file.empty() || file[0] == '/') return false;
  for (const auto& part : fs::path(file)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

std::vector<std::string> GgufFilesIn(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.ends_with(".gguf") && e.is_regular_file(ec)) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

bool LooksLikeHubRef(const std::string& s) { return ParseHubRef(s).ok(); }

StatusOr<HubModelRef> ParseHubRef(const std::string& s) {
  const size_t colon = s.find(':');
  const std::string id = s.substr(0, colon);
  const size_t slash = id.find('/');
  if (slash == std::string::npos || !IsRepoPart(id.substr(0, slash)) ||
      !IsRepoPart(id.substr(slash + 1))) {
    return InvalidArgument(s + ": not a repo id ORG/NAME[:FILE]");
  }
  HubModelRef ref{id, ""};
  if (colon != std::string::npos) {
    ref.file = s.substr(colon + 1);
    if (!IsSnapshotRelative(ref.file)) {
      return InvalidArgument(s + ": FILE after ':' must be a relative path inside the repo");
    }
  }
  return ref;
}

std::string HubCacheDir() {
  for (const char* name : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
    if (const std::string v = Env(name); !v.empty()) return v;
  }
  if (const std::string home = Env("HF_HOME"); !home.empty()) return home + "/hub";
  if (const std::string xdg = Env("XDG_CACHE_HOME"); !xdg.empty()) {
    return xdg + "/huggingface/hub";
  }
  return Env("HOME") + "/.cache/huggingface/hub";
}

bool HubOffline() {
  std::string v = Env("HF_HUB_OFFLINE");
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::toupper(c); });
  return v == "1" || v == "ON" || v == "YES" || v == "TRUE";
}

bool IsCommitHash(const std::string& revision) {
  return revision.size() == 40 && std::all_of(revision.begin(), revision.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string RepoFolderName(const std::string& repo_id) {
  std::string name = "models--" + repo_id;
  const size_t slash = name.find('/');
  if (slash != std::string::npos) name.replace(slash, 1, "--");
  return name;
}

HubRepoCache::HubRepoCache(std::string cache_dir, std::string repo_id)
    : cache_dir_(std::move(cache_dir)),
      repo_id_(std::move(repo_id)),
      folder_((fs::path(cache_dir_) / RepoFolderName(repo_id_)).string()) {}

std::string HubRepoCache::RefPath(const std::string& revision) const {
  return folder_ + "/refs/" + revision;
}
std::string HubRepoCache::BlobPath(const std::string& etag) const {
  return folder_ + "/blobs/" + etag;
}
std::string HubRepoCache::SnapshotDir(const std::string& commit) const {
  return folder_ + "/snapshots/" + commit;
}
std::string HubRepoCache::LockPath(const std::string& etag) const {
  return (fs::path(cache_dir_) / ".locks" / RepoFolderName(repo_id_) / (etag + ".lock")).string();
}

StatusOr<std::string> HubRepoCache::ResolveCommit(const std::string& revision) const {
  if (IsCommitHash(revision)) return revision;
  std::error_code ec;
  if (!fs::is_directory(folder_, ec)) {
    return NotFound(repo_id_ + ": not in the Hugging Face cache (no " + folder_ +
                    "); download it with `g4 pull " + repo_id_ + "`");
  }
  if (!IsSnapshotRelative(revision)) return InvalidArgument("--revision " + revision + ": invalid");
  std::ifstream f(RefPath(revision));
  if (!f) {
    return NotFound(repo_id_ + ": revision '" + revision + "' not in the cache (no " +
                    RefPath(revision) + "); pull it with `g4 pull " + repo_id_ +
                    " --revision " + revision + "`");
  }
  std::string commit;
  f >> commit;
  if (!IsCommitHash(commit)) {
    return DataLoss(RefPath(revision) + ": not a commit hash: '" + commit + "'");
  }
  return commit;
}

Status HubRepoCache::WriteRef(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return Status::Ok();
  if (!IsSnapshotRelative(revision)) return InvalidArgument("--revision " + revision + ": invalid");
  const fs::path ref = RefPath(revision);
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  std::ofstream f(ref, std::ios::trunc);
  f << commit;  // no newline: huggingface_hub writes the bare hash
  f.close();
  if (!f) return IoError("cannot write " + ref.string());
  return Status::Ok();
}

Status HubRepoCache::LinkSnapshotFile(const std::string& commit, const std::string& file,
                                      const std::string& etag) const {
  if (!IsSnapshotRelative(file)) return InvalidArgument(file + ": not a relative repo path");
  const fs::path link = fs::path(SnapshotDir(commit)) / file;
  std::string target;
  const auto depth = std::count(file.begin(), file.end(), '/');
  for (int i = 0; i < 2 + depth; ++i) target += "../";
  target += "blobs/" + etag;
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  if (ec) return IoError("cannot create " + link.parent_path().string() + ": " + ec.message());
  fs::remove(link, ec);
  fs::create_symlink(target, link, ec);
  if (ec) return IoError("cannot link " + link.string() + " -> " + target + ": " + ec.message());
  return Status::Ok();
}

StatusOr<std::string> ResolveModelPath(const std::string& model, const std::string& revision,
                                       const std::string& cache_dir) {
  std::error_code ec;
  if (fs::exists(model, ec)) {  // a local path always wins over a repo id
    if (model.ends_with(".safetensors") && !fs::is_directory(model, ec)) {
      return InvalidArgument(
          "--model " + model + ": a single .safetensors file; expected a checkpoint directory "
          "(config.json + safetensors: give " + fs::path(model).parent_path().string() +
          "/) or a .gguf file");
    }
    return model;
  }
  auto ref = ParseHubRef(model);
  if (!ref.ok() || model.ends_with(".safetensors")) {
    return NotFound("--model " + model + ": no such file or directory (and not a Hugging Face "
                    "repo id ORG/NAME[:FILE.gguf])");
  }
  const HubRepoCache repo(cache_dir, ref->repo_id);
  auto commit = repo.ResolveCommit(revision.empty() ? "main" : revision);
  if (!commit.ok()) return commit.status().WithContext("--model " + model);
  const std::string snapshot = repo.SnapshotDir(*commit);
  if (!fs::is_directory(snapshot, ec)) {
    return NotFound("--model " + model + ": commit " + *commit + " has no snapshot in the cache (" +
                    snapshot + "); pull it with `g4 pull " + ref->repo_id + "`");
  }
  if (!ref->file.empty()) {
    const std::string path = snapshot + "/" + ref->file;
    if (!fs::exists(path, ec)) {
      const auto ggufs = GgufFilesIn(snapshot);
      return NotFound("--model " + model + ": no file " + ref->file + " in " + snapshot +
                      (ggufs.empty() ? "" : " (.gguf files there: " + Join(ggufs) + ")"));
    }
    return path;
  }
  if (fs::exists(snapshot + "/config.json", ec)) return snapshot;
  const auto ggufs = GgufFilesIn(snapshot);
  if (ggufs.size() == 1) return snapshot + "/" + ggufs[0];
  if (ggufs.empty()) {
    return NotFound("--model " + model + ": " + snapshot +
                    " has neither config.json nor a .gguf file");
  }
  return InvalidArgument("--model " + model + ": the snapshot holds several .gguf files (" +
                         Join(ggufs) + "); pick one with " + ref->repo_id + ":FILE.gguf");
}

}  // namespace g4
