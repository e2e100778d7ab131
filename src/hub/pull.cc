#include "hub/pull.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/log.h"
#include "hub/http.h"
#include "hub/progress.h"
#include "hub/sha256.h"
#include "loader/hf_cache.h"

namespace g4::hub {

namespace fs = std::filesystem;

namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

struct RepoFile {
  std::string path;
  uint64_t size = 0;
  std::string lfs_sha256;  // empty: a plain git file
};

// Words an HTTP error status of the hub, naming the repo or `what` (a file of it).
Status HubError(const HttpResponse& r, const std::string& what, const PullOptions& o) {
  const std::string code = r.Header("x-error-code");
  const std::string status = " (HTTP " + std::to_string(r.status) + ")";
  if (r.status == 401 || r.status == 403) {
    return FailedPrecondition(
        what + ": access denied" + status + ": the repo is gated or private (or does not "
        "exist); accept its terms on the hub and " +
        (o.token.empty() ? "set HF_TOKEN to a token with access"
                         : "check that HF_TOKEN is a token with access"));
  }
  if (r.status == 404) {
    if (code == "RevisionNotFound") {
      return NotFound(o.repo_id + ": revision '" + o.revision + "' not found on " + o.endpoint +
                      status);
    }
    if (code == "EntryNotFound") return NotFound(what + ": no such file in the repo" + status);
    return NotFound(o.repo_id + ": repository not found on " + o.endpoint + status);
  }
  std::string body = r.body.substr(0, 200);
  return Unavailable(what + ": the hub answered HTTP " + std::to_string(r.status) +
                     (body.empty() ? "" : ": " + body));
}

std::vector<std::string> AuthHeaders(const PullOptions& o, const std::string& url) {
  // The token goes to the hub only, never to the CDN a file redirects to.
  if (o.token.empty() || !url.starts_with(o.endpoint + "/")) return {};
  return {"Authorization: Bearer " + o.token};
}

StatusOr<nlohmann::json> GetJson(const std::string& url, const std::string& what,
                                 const PullOptions& o, std::string* next_url = nullptr) {
  HttpRequest req;
  req.url = url;
  req.headers = AuthHeaders(o, url);
  auto r = HttpFetch(req);
  if (!r.ok()) return r.status().WithContext(o.repo_id);
  if (r->status != 200) return HubError(*r, what, o);
  auto j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return DataLoss(url + ": the hub's answer is not JSON");
  if (next_url) {  // pagination: Link: <url>; rel="next"
    next_url->clear();
    const std::string link = r->Header("link");
    const size_t rel = link.find("rel=\"next\"");
    const size_t lt = link.rfind('<', rel), gt = link.find('>', lt);
    if (rel != std::string::npos && lt != std::string::npos && gt != std::string::npos) {
      *next_url = link.substr(lt + 1, gt - lt - 1);
    }
  }
  return j;
}

StatusOr<std::vector<RepoFile>> ListFiles(const std::string& commit, const PullOptions& o) {
  std::vector<RepoFile> files;
  std::string url = o.endpoint + "/api/models/" + o.repo_id + "/tree/" + commit +
                    "?recursive=true&expand=false";
  while (!url.empty()) {
    std::string next;
    G4_ASSIGN_OR_RETURN(nlohmann::json page, GetJson(url, o.repo_id, o, &next));
    if (!page.is_array()) return DataLoss(url + ": the tree listing is not a JSON array");
    for (const auto& e : page) {
      if (!e.is_object() || e.value("type", "") != "file" || !e.contains("path")) continue;
      RepoFile f;
      f.path = e["path"].get<std::string>();
      f.size = e.value("size", uint64_t{0});
      if (e.contains("lfs") && e["lfs"].is_object()) {
        f.lfs_sha256 = e["lfs"].value("oid", "");
        f.size = e["lfs"].value("size", f.size);
      }
      files.push_back(std::move(f));
    }
    url = next;
  }
  return files;
}

bool Included(const std::string& path, const std::vector<std::string>& include) {
  if (include.empty()) return true;
  for (std::string glob : include) {
    if (glob.ends_with("/")) glob += "*";  // a folder: everything under it, as huggingface_hub
    if (fnmatch(glob.c_str(), path.c_str(), 0) == 0) return true;
  }
  return false;
}

std::string NormalizeEtag(std::string etag) {
  if (etag.starts_with("W/")) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  return etag;
}

bool IsSha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// What HEAD /ORG/NAME/resolve/COMMIT/FILE says of a file.
struct FileMetadata {
  std::string etag;      // the blob's name
  std::string location;  // where its bytes are (a CDN for LFS files)
  uint64_t size = 0;
  bool has_size = false;
};

StatusOr<FileMetadata> Head(const std::string& commit, const RepoFile& file,
                            const PullOptions& o) {
  const std::string what = o.repo_id + "/" + file.path;
  std::string url = o.endpoint + "/" + o.repo_id + "/resolve/" + UrlQuote(commit, "") + "/" +
                    UrlQuote(file.path);
  for (int hops = 0;; ++hops) {
    HttpRequest req;
    req.url = url;
    req.head = true;
    req.follow_redirects = false;
    req.headers = AuthHeaders(o, url);
    req.headers.push_back("Accept-Encoding: identity");  // the real size, as huggingface_hub
    auto r = HttpFetch(req);
    if (!r.ok()) return r.status().WithContext(what);
    const std::string location = r->Header("location");
    const bool redirect = r->status >= 300 && r->status < 400;
    // A redirect on the hub's own host (a renamed repo) is followed, as huggingface_hub does;
    // one to another host points at the file's bytes (a CDN), and its headers describe the file.
    const std::string origin =
        o.endpoint.substr(0, o.endpoint.find('/', o.endpoint.find("://") + 3));
    const bool on_hub = location.starts_with("/") || location.starts_with(origin + "/");
    if (redirect && hops < 5 && on_hub) {
      url = location.starts_with("/") ? origin + location : location;
      continue;
    }
    if (!redirect && r->status != 200) return HubError(*r, what, o);
    FileMetadata m;
    m.etag = NormalizeEtag(r->Header("x-linked-etag").empty() ? r->Header("etag")
                                                              : r->Header("x-linked-etag"));
    if (m.etag.empty() || m.etag.find('/') != std::string::npos || m.etag.starts_with(".")) {
      return DataLoss(what + ": the hub sent no usable ETag");
    }
    const std::string commit_header = r->Header("x-repo-commit");
    if (!commit_header.empty() && commit_header != commit) {
      return DataLoss(what + ": the hub answered for commit " + commit_header + ", not " +
                      commit);
    }
    m.location = redirect ? location : url;
    std::string size = r->Header("x-linked-size");
    if (size.empty() && !redirect) size = r->Header("content-length");
    if (!size.empty()) {
      m.size = std::strtoull(size.c_str(), nullptr, 10);
      m.has_size = true;
    }
    return m;
  }
}

// The lock huggingface_hub's FileLock takes on .locks/<repo>/<etag>.lock (flock): one writer of
// a blob at a time, whichever tool it is.
class BlobLock {
 public:
  static StatusOr<std::unique_ptr<BlobLock>> Take(const std::string& path,
                                                  const std::string& what) {
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0664);
    if (fd < 0) return IoError("cannot open the lock " + path);
    std::unique_ptr<BlobLock> lock(new BlobLock(fd));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      LogInfo(what + ": waiting for another download of it (" + path + ")");
      if (::flock(fd, LOCK_EX) != 0) return IoError("cannot lock " + path);
    }
    return lock;
  }
  ~BlobLock() { ::close(fd_); }  // closing releases the flock

 private:
  explicit BlobLock(int fd) : fd_(fd) {}
  int fd_;
};

uint64_t FileSize(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

// Downloads `m.location` into blobs/<etag> through blobs/<etag>.incomplete, resuming what a
// previous run left there; adds the bytes fetched to `fetched`.
Status Download(const HubRepoCache& cache, const RepoFile& file, const FileMetadata& m,
                uint64_t size, const std::string& sha256, const PullOptions& o,
                uint64_t* fetched) {
  const std::string what = o.repo_id + "/" + file.path;
  const std::string blob = cache.BlobPath(m.etag);
  const std::string part = blob + ".incomplete";
  std::error_code ec;
  fs::create_directories(fs::path(blob).parent_path(), ec);
  if (FileSize(part) > size) fs::remove(part, ec);  // not a prefix of this file
  for (int attempt = 0; attempt < 2; ++attempt) {
    const uint64_t have = FileSize(part);
    if (have == size && fs::exists(part, ec)) break;
    std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(part.c_str(), "ab"), &std::fclose);
    if (!out) return IoError("cannot write " + part);
    if (have > 0 && o.progress) LogInfo(file.path + ": resuming at " + FormatBytes(have));
    Progress progress(file.path, size, have);
    uint64_t now_have = have;
    HttpRequest req;
    req.url = m.location;
    req.headers = AuthHeaders(o, m.location);
    req.range_from = have;
    auto r = HttpDownload(req, out.get(), [&](uint64_t n) {
      now_have = n;
      if (o.progress) progress.Update(n);
    });
    if (std::fclose(out.release()) != 0) return IoError("cannot write " + part);
    if (!r.ok()) {
      return r.status().WithContext(what + " (" + FormatBytes(FileSize(part)) +
                                    " kept; run g4 pull again to resume)");
    }
    if (r->status == 416) {  // the range is past what the server has: start over
      fs::remove(part, ec);
      continue;
    }
    if (r->status != 200 && r->status != 206) return HubError(*r, what, o);
    *fetched += now_have > have ? now_have - have : now_have;
    if (o.progress) progress.Finish(FileSize(part));
    break;
  }
  const uint64_t got = FileSize(part);
  if (got < size) {
    return Unavailable(what + ": the download ended at " + std::to_string(got) + " of " +
                       std::to_string(size) + " bytes; run g4 pull again to resume");
  }
  if (got > size) {
    fs::remove(part, ec);
    return DataLoss(what + ": " + std::to_string(got) + " bytes, the hub says " +
                    std::to_string(size) + "; the download was removed");
  }
  if (!sha256.empty()) {
    G4_ASSIGN_OR_RETURN(const std::string actual, Sha256OfFile(part));
    if (actual != sha256) {
      fs::remove(part, ec);
      return DataLoss(what + ": sha256 mismatch: got " + actual + ", expected " + sha256 +
                      "; the download was removed");
    }
  }
  fs::rename(part, blob, ec);
  if (ec) return IoError("cannot rename " + part + " to " + blob + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

PullOptions PullOptionsFromEnv() {
  PullOptions o;
  o.endpoint = Env("HF_ENDPOINT");
  if (o.endpoint.empty()) o.endpoint = "https://huggingface.co";
  while (o.endpoint.ends_with("/")) o.endpoint.pop_back();
  o.token = Env("HF_TOKEN");
  if (o.token.empty()) {
    std::string path = Env("HF_TOKEN_PATH");
    if (path.empty()) {
      std::string home = Env("HF_HOME");
      if (home.empty()) {
        const std::string xdg = Env("XDG_CACHE_HOME");
        home = (xdg.empty() ? Env("HOME") + "/.cache" : xdg) + "/huggingface";
      }
      path = home + "/token";
    }
    std::ifstream f(path);
    if (f) f >> o.token;
  }
  o.cache_dir = HubCacheDir();
  return o;
}

StatusOr<PullResult> Pull(const PullOptions& o) {
  G4_ASSIGN_OR_RETURN(const HubModelRef ref, ParseHubRef(o.repo_id));
  if (!ref.file.empty() || ref.repo_id != o.repo_id) {
    return InvalidArgument(o.repo_id + ": give the repo as ORG/NAME (files with --include)");
  }
  if (HubOffline()) {
    return FailedPrecondition(o.repo_id + ": HF_HUB_OFFLINE is set, and g4 pull needs the "
                              "network; unset it to download");
  }
  const std::string rev_url =
      o.endpoint + "/api/models/" + o.repo_id + "/revision/" + UrlQuote(o.revision, "");
  G4_ASSIGN_OR_RETURN(const nlohmann::json info, GetJson(rev_url, o.repo_id, o));
  if (!info.is_object() || !info.contains("sha") || !info["sha"].is_string() ||
      !IsCommitHash(info["sha"].get<std::string>())) {
    return DataLoss(rev_url + ": no commit sha in the hub's answer");
  }
  PullResult result;
  result.commit = info["sha"].get<std::string>();
  G4_ASSIGN_OR_RETURN(std::vector<RepoFile> all, ListFiles(result.commit, o));
  std::vector<RepoFile> files;
  for (auto& f : all) {
    if (Included(f.path, o.include)) files.push_back(std::move(f));
  }
  if (files.empty()) {
    return NotFound(o.repo_id + ": no file at " + result.commit +
                    (o.include.empty() ? "" : " matches --include"));
  }
  const HubRepoCache cache(o.cache_dir, o.repo_id);
  uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  if (o.progress) {
    LogInfo("pull " + o.repo_id + " " + o.revision + " (commit " + result.commit + "): " +
            std::to_string(files.size()) + " files, " + FormatBytes(total) + ", into " +
            cache.folder());
  }
  for (const auto& f : files) {
    const std::string what = o.repo_id + "/" + f.path;
    G4_ASSIGN_OR_RETURN(const FileMetadata m, Head(result.commit, f, o));
    const uint64_t size = m.has_size ? m.size : f.size;
    if (m.has_size && f.size != 0 && m.size != f.size) {
      return DataLoss(what + ": the file listing says " + std::to_string(f.size) +
                      " bytes, the file's headers " + std::to_string(m.size));
    }
    // An LFS file's blob is named by its sha256; the bytes must hash to it.
    std::string sha256 = f.lfs_sha256;
    if (sha256.empty() && IsSha256(m.etag)) sha256 = m.etag;
    if (!sha256.empty() && sha256 != m.etag) {
      return DataLoss(what + ": the listing's sha256 " + sha256 + " is not its ETag " + m.etag);
    }
    const std::string blob = cache.BlobPath(m.etag);
    G4_ASSIGN_OR_RETURN(const auto lock, BlobLock::Take(cache.LockPath(m.etag), what));
    std::error_code ec;
    if (fs::is_regular_file(blob, ec) && FileSize(blob) == size) {
      ++result.already_cached;
    } else {
      G4_RETURN_IF_ERROR(Download(cache, f, m, size, sha256, o, &result.bytes));
      ++result.downloaded;
    }
    G4_RETURN_IF_ERROR(cache.LinkSnapshotFile(result.commit, f.path, m.etag));
  }
  G4_RETURN_IF_ERROR(cache.WriteRef(o.revision, result.commit));
  result.snapshot_dir = cache.SnapshotDir(result.commit);
  return result;
}

}  // namespace g4::hub
