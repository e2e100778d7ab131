// Tests for WeightStore and the sharded writer: single-file and sharded round trips, and the
// index validation errors.
#include "loader/weight_store.h"

#include <unistd.h>

#include <cstring>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "loader/loader_test_util.h"
#include "loader/safetensors_writer.h"

namespace g4 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using loader_test::FillFrom;
using loader_test::PatternBytes;
using loader_test::ReadFile;
using loader_test::ScopedTempDir;
using loader_test::SpecsOf;
using loader_test::TestTensor;
using loader_test::WriteFile;

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// Six 40-byte tensors: with a 100-byte cap they pack two per shard into three shards.
std::vector<TestTensor> SixTensors() {
  std::vector<TestTensor> t;
  for (int i = 0; i < 6; ++i) {
    const DType dtype = i % 2 ? DType::kF32 : DType::kBF16;
    const int64_t n = dtype == DType::kF32 ? 10 : 20;
    t.push_back({{"layer." + std::to_string(i) + ".w", dtype, {n}}, PatternBytes(40, i)});
  }
  return t;
}

void ExpectSameTensors(const WeightStore& store, const std::vector<TestTensor>& tensors) {
  ASSERT_EQ(store.Names().size(), tensors.size());
  size_t total = 0;
  for (const TestTensor& want : tensors) {
    const TensorInfo* got = store.Find(want.spec.name);
    ASSERT_NE(got, nullptr) << want.spec.name;
    EXPECT_EQ(got->dtype, want.spec.dtype);
    EXPECT_EQ(got->shape, want.spec.shape);
    ASSERT_EQ(got->nbytes, want.bytes.size());
    EXPECT_EQ(std::memcmp(got->data, want.bytes.data(), got->nbytes), 0) << want.spec.name;
    total += got->nbytes;
  }
  EXPECT_EQ(store.total_bytes(), total);
}

TEST(WeightStoreTest, SingleFileRoundTrip) {
  ScopedTempDir dir;
  const std::vector<TestTensor> tensors = SixTensors();
  Status s = WriteShardedSafetensors(dir.path(), SpecsOf(tensors), 1 << 20, FillFrom(tensors));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Exists(dir.File("model.safetensors")));
  EXPECT_FALSE(Exists(dir.File("model.safetensors.index.json")));

  auto store = WeightStore::OpenDir(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_THAT((*store)->files(), ElementsAre(dir.File("model.safetensors")));
  ExpectSameTensors(**store, tensors);
  EXPECT_EQ((*store)->Find("missing"), nullptr);
}

TEST(WeightStoreTest, ShardedRoundTrip) {
  ScopedTempDir dir;
  const std::vector<TestTensor> tensors = SixTensors();
  Status s = WriteShardedSafetensors(dir.path(), SpecsOf(tensors), 100, FillFrom(tensors));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(Exists(dir.File("model.safetensors")));

  auto index = nlohmann::json::parse(ReadFile(dir.File("model.safetensors.index.json")));
  EXPECT_EQ(index["metadata"]["total_size"], 240);
  EXPECT_EQ(index["weight_map"].size(), 6u);
  EXPECT_EQ(index["weight_map"]["layer.0.w"], "model-00001-of-00003.safetensors");
  EXPECT_EQ(index["weight_map"]["layer.3.w"], "model-00002-of-00003.safetensors");
  EXPECT_EQ(index["weight_map"]["layer.5.w"], "model-00003-of-00003.safetensors");

  auto store = WeightStore::OpenDir(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_THAT((*store)->files(), ElementsAre(dir.File("model-00001-of-00003.safetensors"),
                                             dir.File("model-00002-of-00003.safetensors"),
                                             dir.File("model-00003-of-00003.safetensors")));
  ExpectSameTensors(**store, tensors);
  EXPECT_EQ((*store)->Find("layer.4.w")->file, dir.File("model-00003-of-00003.safetensors"));
}

TEST(WeightStoreTest, OversizedTensorGetsItsOwnShard) {
  ScopedTempDir dir;
  const std::vector<TestTensor> tensors = {{{"a", DType::kU8, {10}}, PatternBytes(10, 1)},
                                           {{"big", DType::kU8, {500}}, PatternBytes(500, 2)},
                                           {{"c", DType::kU8, {10}}, PatternBytes(10, 3)}};
  ASSERT_TRUE(WriteShardedSafetensors(dir.path(), SpecsOf(tensors), 100, FillFrom(tensors)).ok());
  auto store = WeightStore::OpenDir(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->files().size(), 3u);
  ExpectSameTensors(**store, tensors);
}

TEST(WeightStoreTest, ResavingRemovesStaleWeightFiles) {
  ScopedTempDir dir;
  const std::vector<TestTensor> tensors = SixTensors();
  ASSERT_TRUE(WriteShardedSafetensors(dir.path(), SpecsOf(tensors), 100, FillFrom(tensors)).ok());
  WriteFile(dir.File("config.json"), "{}");
  const std::vector<TestTensor> fewer(tensors.begin(), tensors.begin() + 2);
  ASSERT_TRUE(WriteShardedSafetensors(dir.path(), SpecsOf(fewer), 1000, FillFrom(fewer)).ok());
  EXPECT_FALSE(Exists(dir.File("model.safetensors.index.json")));
  EXPECT_FALSE(Exists(dir.File("model-00001-of-00003.safetensors")));
  EXPECT_TRUE(Exists(dir.File("config.json")));
  auto store = WeightStore::OpenDir(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ExpectSameTensors(**store, fewer);
}

TEST(WeightStoreTest, MissingCheckpointNamesDirAndBothFiles) {
  ScopedTempDir dir;
  auto store = WeightStore::OpenDir(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(store.status().message(), HasSubstr(dir.path()));
  EXPECT_THAT(store.status().message(), HasSubstr("model.safetensors.index.json"));
  EXPECT_THAT(store.status().message(), HasSubstr("nor model.safetensors"));
}

class ShardedStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        WriteShardedSafetensors(dir_.path(), SpecsOf(tensors_), 100, FillFrom(tensors_)).ok());
    index_ = nlohmann::json::parse(ReadFile(index_path_));
  }
  void RewriteIndex() { WriteFile(index_path_, index_.dump()); }
  Status OpenError() {
    auto store = WeightStore::OpenDir(dir_.path());
    EXPECT_FALSE(store.ok());
    return store.ok() ? Status::Ok() : store.status();
  }

  ScopedTempDir dir_;
  const std::vector<TestTensor> tensors_ = SixTensors();
  const std::string index_path_ = dir_.File("model.safetensors.index.json");
  nlohmann::json index_;
};

TEST_F(ShardedStoreTest, IndexNamingAMissingShard) {
  ASSERT_EQ(::unlink(dir_.File("model-00002-of-00003.safetensors").c_str()), 0);
  Status s = OpenError();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(index_path_ + ": weight_map names shard "
                                     "'model-00002-of-00003.safetensors'"));
  EXPECT_THAT(s.message(), HasSubstr("No such file"));
}

TEST_F(ShardedStoreTest, IndexNamingATensorNotInItsShard) {
  index_["weight_map"]["layer.0.w"] = "model-00002-of-00003.safetensors";
  RewriteIndex();
  Status s = OpenError();
  EXPECT_THAT(s.message(),
              HasSubstr(index_path_ + ": weight_map puts tensor 'layer.0.w' in shard " +
                        dir_.File("model-00002-of-00003.safetensors") +
                        ", which does not contain it"));
}

TEST_F(ShardedStoreTest, IndexNamingATensorNoShardHas) {
  index_["weight_map"]["ghost"] = "model-00001-of-00003.safetensors";
  RewriteIndex();
  Status s = OpenError();
  EXPECT_THAT(s.message(), HasSubstr("weight_map puts tensor 'ghost' in shard"));
}

TEST_F(ShardedStoreTest, ShardNamesMustStayInTheDirectory) {
  for (const char* bad : {"../model-00001-of-00003.safetensors", "sub/x.safetensors", "..", ""}) {
    index_["weight_map"]["layer.0.w"] = bad;
    RewriteIndex();
    Status s = OpenError();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr(index_path_ + ": weight_map entry for tensor 'layer.0.w' "
                                       "names shard '" + std::string(bad) + "'"));
  }
}

TEST_F(ShardedStoreTest, TensorInTwoShards) {
  // A stray extra shard holding a copy of layer.0.w, listed in the index for another tensor.
  const std::vector<TestTensor> extra = {{{"layer.0.w", DType::kU8, {1}}, "x"},
                                         {{"extra", DType::kU8, {1}}, "y"}};
  ASSERT_TRUE(
      WriteSafetensors(dir_.File("extra.safetensors"), SpecsOf(extra), FillFrom(extra)).ok());
  index_["weight_map"]["extra"] = "extra.safetensors";
  RewriteIndex();
  Status s = OpenError();
  EXPECT_THAT(s.message(), HasSubstr(index_path_ + ": tensor 'layer.0.w' is in two shards: "));
  EXPECT_THAT(s.message(), HasSubstr("model-00001-of-00003.safetensors"));
  EXPECT_THAT(s.message(), HasSubstr("extra.safetensors"));
}

TEST_F(ShardedStoreTest, MalformedIndex) {
  WriteFile(index_path_, "{\"weight_map\": ");
  Status s = OpenError();
  EXPECT_THAT(s.message(), HasSubstr(index_path_ + ": malformed JSON"));
}

TEST_F(ShardedStoreTest, IndexWithoutWeightMap) {
  WriteFile(index_path_, R"({"metadata": {}})");
  Status s = OpenError();
  EXPECT_THAT(s.message(), HasSubstr(index_path_ + ": field 'weight_map' is missing"));
}

TEST_F(ShardedStoreTest, EmptyWeightMap) {
  WriteFile(index_path_, R"({"weight_map": {}})");
  Status s = OpenError();
  EXPECT_THAT(s.message(), HasSubstr(index_path_ + ": field 'weight_map' is empty"));
}

TEST_F(ShardedStoreTest, CorruptShardIsNamed) {
  WriteFile(dir_.File("model-00003-of-00003.safetensors"), "\x01\x02");
  Status s = OpenError();
  EXPECT_THAT(s.message(), HasSubstr(dir_.File("model-00003-of-00003.safetensors") +
                                     ": truncated"));
}

}  // namespace
}  // namespace g4
