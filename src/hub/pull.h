// g4 pull: a model repo from the Hugging Face Hub into the Hugging Face cache (loader/hf_cache.h),
// by huggingface_hub's own protocol, so either tool finds what the other downloaded:
//   GET  /api/models/ORG/NAME/revision/REV             the commit REV names
//   GET  /api/models/ORG/NAME/tree/COMMIT?recursive=1  the files (size, LFS sha256)
//   HEAD /ORG/NAME/resolve/COMMIT/FILE                 X-Repo-Commit, ETag / X-Linked-Etag,
//                                                      X-Linked-Size, Location (LFS: a CDN)
//   GET  <Location>                                    the bytes, resumed with Range
// Each file lands in blobs/<etag> through blobs/<etag>.incomplete (kept on a network failure,
// resumed next time), its size checked and, for LFS files, its sha256; then
// snapshots/<commit>/FILE links to it and refs/REV holds the commit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace g4::hub {

struct PullOptions {
  std::string repo_id;              // ORG/NAME
  std::string revision = "main";    // branch, tag or commit
  std::vector<std::string> include;  // fnmatch globs on repo paths (as allow_patterns); empty: all
  std::string endpoint;             // e.g. https://huggingface.co
  std::string token;                // sent as "Authorization: Bearer" to the endpoint only
  std::string cache_dir;
  bool progress = true;             // progress lines on stderr
};

// Endpoint from HF_ENDPOINT (default https://huggingface.co), token from HF_TOKEN (else the
// token file huggingface_hub keeps: HF_TOKEN_PATH, else HF_HOME/token), cache from HubCacheDir().
PullOptions PullOptionsFromEnv();

struct PullResult {
  std::string commit;
  std::string snapshot_dir;
  int downloaded = 0;       // files fetched (whole or resumed)
  int already_cached = 0;   // files whose blob was there
  uint64_t bytes = 0;       // bytes fetched over the network
};

// Errors name the repo (and the file): not found (404), access denied or gated (401/403: set
// HF_TOKEN), a network failure, a size or sha256 mismatch (the bad download is removed).
// HF_HUB_OFFLINE set: FailedPrecondition, no request made.
StatusOr<PullResult> Pull(const PullOptions& options);

}  // namespace g4::hub
