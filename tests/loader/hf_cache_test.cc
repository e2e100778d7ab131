// loader/hf_cache.h on a fake Hugging Face cache made in a temp dir, laid out as huggingface_hub
// lays it out (refs/, snapshots/<commit>/ symlinks into blobs/): which environment variable names
// the cache, repo ids vs paths, --revision as a branch, a tag or a commit, a checkpoint folder vs
// one or several .gguf files, and the errors (not cached, a .safetensors file, a missing :FILE).
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loader/hf_cache.h"
#include "loader_test_util.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using loader_test::ScopedTempDir;

const std::string kMain = "1111111111111111111111111111111111111111";
const std::string kTag = "2222222222222222222222222222222222222222";

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// A blob plus its snapshot symlink, through the same calls g4 pull uses.
void AddFile(const HubRepoCache& repo, const std::string& commit, const std::string& file,
             const std::string& etag) {
  WriteText(repo.BlobPath(etag), "bytes of " + file);
  ASSERT_TRUE(repo.LinkSnapshotFile(commit, file, etag).ok());
}

// Sets an environment variable for one test and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(HfCache, ParsesRepoIdsAndTellsThemFromPaths) {
  auto r = ParseHubRef("google/gemma-3-270m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo_id, "google/gemma-3-270m");
  EXPECT_EQ(r->file, "");
  r = ParseHubRef("unsloth/gemma-3-270m-it-GGUF:gemma-3-270m-it-Q4_0.gguf");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->repo_id, "unsloth/gemma-3-270m-it-GGUF");
  EXPECT_EQ(r->file, "gemma-3-270m-it-Q4_0.gguf");
  for (const char* s : {"/abs/path", "./a/b", "a/b/c", "model", "../x/y", "a/b:../../etc",
                        "a/b:", "~/x", "org/.hidden"}) {
    EXPECT_FALSE(LooksLikeHubRef(s)) << s;
  }
  EXPECT_EQ(RepoFolderName("google/gemma-3-270m"), "models--google--gemma-3-270m");
  EXPECT_TRUE(IsCommitHash(kMain));
  EXPECT_FALSE(IsCommitHash("main"));
  EXPECT_FALSE(IsCommitHash("ABCDEF1111111111111111111111111111111111"));
}

TEST(HfCache, CacheDirFollowsHuggingFaceHubsVariables) {
  ScopedEnv a("HF_HUB_CACHE", nullptr), b("HUGGINGFACE_HUB_CACHE", nullptr),
      c("HF_HOME", nullptr), d("XDG_CACHE_HOME", nullptr), e("HOME", "/home/u");
  EXPECT_EQ(HubCacheDir(), "/home/u/.cache/huggingface/hub");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(HubCacheDir(), "/xdg/huggingface/hub");
  setenv("HF_HOME", "/hfhome", 1);
  EXPECT_EQ(HubCacheDir(), "/hfhome/hub");
  setenv("HUGGINGFACE_HUB_CACHE", "/legacy", 1);
  EXPECT_EQ(HubCacheDir(), "/legacy");
  setenv("HF_HUB_CACHE", "/hubcache", 1);
  EXPECT_EQ(HubCacheDir(), "/hubcache");
}

TEST(HfCache, OfflineFlagReadAsHuggingFaceHubReadsIt) {
  ScopedEnv off("HF_HUB_OFFLINE", "1");
  EXPECT_TRUE(HubOffline());
  setenv("HF_HUB_OFFLINE", "true", 1);
  EXPECT_TRUE(HubOffline());
  setenv("HF_HUB_OFFLINE", "0", 1);
  EXPECT_FALSE(HubOffline());
  unsetenv("HF_HUB_OFFLINE");
  EXPECT_FALSE(HubOffline());
}

TEST(HfCache, SnapshotLinksAreRelativeIntoBlobs) {
  ScopedTempDir tmp;
  HubRepoCache repo(tmp.path(), "org/ckpt");
  AddFile(repo, kMain, "config.json", "aaa");
  AddFile(repo, kMain, "sub/dir/x.json", "bbb");
  EXPECT_EQ(fs::read_symlink(repo.SnapshotDir(kMain) + "/config.json").string(),
            "../../blobs/aaa");
  EXPECT_EQ(fs::read_symlink(repo.SnapshotDir(kMain) + "/sub/dir/x.json").string(),
            "../../../../blobs/bbb");
  std::ifstream f(repo.SnapshotDir(kMain) + "/sub/dir/x.json");
  std::string text;
  std::getline(f, text);
  EXPECT_EQ(text, "bytes of sub/dir/x.json");
  EXPECT_EQ(repo.folder(), tmp.path() + "/models--org--ckpt");
  EXPECT_EQ(repo.LockPath("aaa"), tmp.path() + "/.locks/models--org--ckpt/aaa.lock");
}

TEST(HfCache, ResolvesBranchTagAndCommitToTheCheckpointFolder) {
  ScopedTempDir tmp;
  HubRepoCache repo(tmp.path(), "org/ckpt");
  AddFile(repo, kMain, "config.json", "c1");
  AddFile(repo, kTag, "config.json", "c2");
  ASSERT_TRUE(repo.WriteRef("main", kMain).ok());
  ASSERT_TRUE(repo.WriteRef("v1.0", kTag).ok());
  ASSERT_TRUE(repo.WriteRef(kTag, kTag).ok());  // a commit needs no ref
  EXPECT_FALSE(fs::exists(repo.RefPath(kTag)));

  auto p = ResolveModelPath("org/ckpt", "", tmp.path());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, repo.SnapshotDir(kMain));
  p = ResolveModelPath("org/ckpt", "v1.0", tmp.path());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, repo.SnapshotDir(kTag));
  p = ResolveModelPath("org/ckpt", kTag, tmp.path());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, repo.SnapshotDir(kTag));

  p = ResolveModelPath("org/ckpt", "dev", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("revision 'dev' not in the cache"));
  EXPECT_THAT(p.status().ToString(), HasSubstr("g4 pull org/ckpt --revision dev"));
}

TEST(HfCache, PicksTheOnlyGgufOrAsksForOneOfSeveral) {
  ScopedTempDir tmp;
  HubRepoCache one(tmp.path(), "org/one-GGUF");
  AddFile(one, kMain, "m-Q4_0.gguf", "g1");
  AddFile(one, kMain, "README.md", "r1");
  ASSERT_TRUE(one.WriteRef("main", kMain).ok());
  auto p = ResolveModelPath("org/one-GGUF", "main", tmp.path());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, one.SnapshotDir(kMain) + "/m-Q4_0.gguf");

  HubRepoCache two(tmp.path(), "org/two-GGUF");
  AddFile(two, kMain, "m-Q4_0.gguf", "g2");
  AddFile(two, kMain, "m-Q8_0.gguf", "g3");
  ASSERT_TRUE(two.WriteRef("main", kMain).ok());
  p = ResolveModelPath("org/two-GGUF", "", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("m-Q4_0.gguf, m-Q8_0.gguf"));
  EXPECT_THAT(p.status().ToString(), HasSubstr("org/two-GGUF:FILE.gguf"));
  p = ResolveModelPath("org/two-GGUF:m-Q8_0.gguf", "", tmp.path());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, two.SnapshotDir(kMain) + "/m-Q8_0.gguf");
  p = ResolveModelPath("org/two-GGUF:m-Q2_K.gguf", "", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("no file m-Q2_K.gguf"));
  EXPECT_THAT(p.status().ToString(), HasSubstr("m-Q4_0.gguf, m-Q8_0.gguf"));

  HubRepoCache none(tmp.path(), "org/none");
  AddFile(none, kMain, "README.md", "r2");
  ASSERT_TRUE(none.WriteRef("main", kMain).ok());
  p = ResolveModelPath("org/none", "", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("neither config.json nor a .gguf"));
}

TEST(HfCache, NotCachedSaysHowToPull) {
  ScopedTempDir tmp;
  auto p = ResolveModelPath("org/absent", "", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(p.status().ToString(), HasSubstr("--model org/absent"));
  EXPECT_THAT(p.status().ToString(), HasSubstr("g4 pull org/absent"));
  p = ResolveModelPath(tmp.File("no/such/dir"), "", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("no such file or directory"));
}

TEST(HfCache, ALocalPathWinsOverARepoId) {
  ScopedTempDir tmp;
  HubRepoCache repo(tmp.path() + "/cache", "org/ckpt");
  AddFile(repo, kMain, "config.json", "c1");
  ASSERT_TRUE(repo.WriteRef("main", kMain).ok());
  fs::create_directories(tmp.File("org/ckpt"));
  const fs::path cwd = fs::current_path();
  fs::current_path(tmp.path());
  auto p = ResolveModelPath("org/ckpt", "", tmp.path() + "/cache");
  fs::current_path(cwd);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(*p, "org/ckpt");
}

TEST(HfCache, ASafetensorsFileIsNotACheckpoint) {
  ScopedTempDir tmp;
  WriteText(tmp.File("m/model.safetensors"), "x");
  auto p = ResolveModelPath(tmp.File("m/model.safetensors"), "", tmp.path());
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("expected a checkpoint directory"));
  EXPECT_THAT(p.status().ToString(), HasSubstr(".gguf file"));
  EXPECT_THAT(p.status().ToString(), HasSubstr(tmp.File("m")));
  p = ResolveModelPath("m/model.safetensors", "", tmp.path());  // absent: not a repo id either
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().ToString(), HasSubstr("no such file or directory"));
}

}  // namespace
}  // namespace g4
