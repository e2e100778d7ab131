// The Hugging Face cache, laid out exactly as huggingface_hub lays it out, so that a model g4
// pulled is found by huggingface_hub and one huggingface_hub downloaded is found by g4:
//
//   <cache>/models--ORG--NAME/refs/<revision>             the commit a branch or tag names
//   <cache>/models--ORG--NAME/snapshots/<commit>/<file>   relative symlink to ../../blobs/<etag>
//   <cache>/models--ORG--NAME/blobs/<etag>                the bytes (LFS files: their sha256)
//   <cache>/.locks/models--ORG--NAME/<etag>.lock          flock()ed while a blob is written
//
// <cache> is HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, else
// XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub (huggingface_hub's constants.py).
// Nothing here uses the network: `--model ORG/NAME` reads only what is already in the cache.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace g4 {

// `ORG/NAME[:FILE]` as --model takes it.
struct HubModelRef {
  std::string repo_id;  // ORG/NAME
  std::string file;     // FILE inside the snapshot (e.g. model-Q4_0.gguf); empty: the snapshot
};

// True when `s` has the shape of a repo id with an optional :FILE (one '/', both parts made of
// letters, digits, '-', '_', '.', neither starting with '.'); a path such as ./a/b, /a/b or
// a/b/c never is.
bool LooksLikeHubRef(const std::string& s);
StatusOr<HubModelRef> ParseHubRef(const std::string& s);

// The cache directory the environment names (see above).
std::string HubCacheDir();
// True when HF_HUB_OFFLINE is set to a true value (1, ON, YES, TRUE), as huggingface_hub reads it.
bool HubOffline();

// A revision that is a commit hash (40 lowercase hex digits) is used as is; anything else is a
// branch or tag looked up in refs/.
bool IsCommitHash(const std::string& revision);
// models--ORG--NAME
std::string RepoFolderName(const std::string& repo_id);

// Paths inside one repo's folder of the cache.
class HubRepoCache {
 public:
  HubRepoCache(std::string cache_dir, std::string repo_id);

  const std::string& repo_id() const { return repo_id_; }
  const std::string& folder() const { return folder_; }
  std::string RefPath(const std::string& revision) const;
  std::string BlobPath(const std::string& etag) const;
  std::string SnapshotDir(const std::string& commit) const;
  std::string LockPath(const std::string& etag) const;

  // The commit `revision` stands for: a commit hash itself, else refs/<revision>'s content.
  // NotFound names the repo, the revision and the cache folder.
  StatusOr<std::string> ResolveCommit(const std::string& revision) const;
  // refs/<revision> := commit (nothing when `revision` is the commit itself).
  Status WriteRef(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<file> -> ../../blobs/<etag> (relative, as huggingface_hub makes it).
  Status LinkSnapshotFile(const std::string& commit, const std::string& file,
                          const std::string& etag) const;

 private:
  std::string cache_dir_;
  std::string repo_id_;
  std::string folder_;
};

// What --model names, as a path Checkpoint::Open takes: an existing local path as is (a
// .safetensors file is refused: the directory holding it is the checkpoint), else a cached repo
// `ORG/NAME[:FILE]` at `revision`: FILE in the snapshot, or the snapshot folder when it has
// config.json, or its only .gguf file (several: an error listing them and asking for :FILE).
StatusOr<std::string> ResolveModelPath(const std::string& model, const std::string& revision,
                                       const std::string& cache_dir);
inline StatusOr<std::string> ResolveModelPath(const std::string& model,
                                              const std::string& revision) {
  return ResolveModelPath(model, revision, HubCacheDir());
}

}  // namespace g4
