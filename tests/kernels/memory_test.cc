// ops/memory.h: HostMemory's copies and Buffer's growth rules (contents kept while they fit,
// half again on growth, a clear error when the memory is exhausted, moves hand over the block).
#include "ops/memory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

namespace g4 {
namespace {

using ::testing::HasSubstr;

// HostMemory that refuses allocations above `limit` bytes and counts what is live.
class LimitedMemory final : public Memory {
 public:
  explicit LimitedMemory(size_t limit) : limit_(limit) {}
  const char* name() const override { return "limited"; }
  bool is_device() const override { return false; }
  void* Alloc(size_t bytes) override {
    if (bytes > limit_) return nullptr;
    ++live;
    return HostMemory().Alloc(bytes);
  }
  void Free(void* p) override {
    --live;
    HostMemory().Free(p);
  }
  Status Upload(void* d, const void* s, size_t n) override { return HostMemory().Upload(d, s, n); }
  Status Download(void* d, const void* s, size_t n) override {
    return HostMemory().Download(d, s, n);
  }
  Status Copy(void* d, const void* s, size_t n) override { return HostMemory().Copy(d, s, n); }
  int live = 0;

 private:
  size_t limit_;
};

TEST(MemoryTest, HostMemoryCopiesAndReportsItself) {
  Memory& m = HostMemory();
  EXPECT_FALSE(m.is_device());
  EXPECT_STREQ(m.name(), "host");
  std::vector<int32_t> src(37);
  std::iota(src.begin(), src.end(), -5);
  auto* p = static_cast<int32_t*>(m.Alloc(src.size() * 4));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(m.Upload(p, src.data(), src.size() * 4).ok());
  ASSERT_TRUE(m.Copy(p + 1, p, 36 * 4).ok());  // overlapping: memmove semantics
  std::vector<int32_t> back(src.size());
  ASSERT_TRUE(m.Download(back.data(), p, back.size() * 4).ok());
  EXPECT_EQ(back[0], -5);
  for (size_t i = 1; i < back.size(); ++i) EXPECT_EQ(back[i], src[i - 1]) << i;
  m.Free(p);
}

TEST(MemoryTest, BufferKeepsContentsWhileTheyFitAndGrowsByHalf) {
  LimitedMemory m(1 << 20);
  {
    Buffer<float> b(m);
    EXPECT_EQ(b.data(), nullptr);
    const std::vector<float> v = {1.5f, -2.0f, 3.25f};
    ASSERT_TRUE(b.Assign(v).ok());
    EXPECT_EQ(b.size(), 3u);
    EXPECT_EQ(b.bytes(), 12u);
    EXPECT_EQ(&b.memory(), &m);
    ASSERT_TRUE(b.Allocate(2).ok());  // shrinking keeps the block and its contents
    EXPECT_EQ(b.capacity(), 3u);
    EXPECT_EQ(b.data()[1], -2.0f);
    ASSERT_TRUE(b.Allocate(4).ok());  // growth: half again, at least what was asked
    EXPECT_EQ(b.capacity(), 4u);
    ASSERT_TRUE(b.Allocate(5).ok());
    EXPECT_EQ(b.capacity(), 6u);
    ASSERT_TRUE(b.Allocate(100).ok());
    EXPECT_EQ(b.capacity(), 100u);
    EXPECT_EQ(m.live, 1);  // one block at a time
    Buffer<float> moved = std::move(b);
    EXPECT_EQ(b.data(), nullptr);
    EXPECT_EQ(moved.size(), 100u);
    EXPECT_EQ(m.live, 1);
  }
  EXPECT_EQ(m.live, 0);
}

TEST(MemoryTest, ExhaustedMemoryIsAnErrorNamingTheBytesAndTheMemory) {
  LimitedMemory m(64);
  Buffer<double> b(m);
  ASSERT_TRUE(b.Allocate(8).ok());
  const Status s = b.Allocate(9);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cannot allocate 96 bytes of limited memory"));
  EXPECT_EQ(b.data(), nullptr);  // the old block is gone, nothing dangles
  EXPECT_EQ(m.live, 0);
}

TEST(CachingMemoryTest, ASecondStepOfTheSameShapesAllocatesNothing) {
  LimitedMemory inner(1 << 20);
  CachingMemory m(inner);
  EXPECT_STREQ(m.name(), "limited");
  auto step = [&m] {
    Buffer<float> a(m), b(m), c(m);
    ASSERT_TRUE(a.Allocate(100).ok());
    ASSERT_TRUE(b.Allocate(1000).ok());
    ASSERT_TRUE(c.Allocate(100).ok());  // two blocks of one size live at once
    const std::vector<float> v(100, 2.5f);
    ASSERT_TRUE(m.Upload(a.data(), v.data(), 400).ok());
    ASSERT_TRUE(m.Copy(c.data(), a.data(), 400).ok());
    std::vector<float> back(100);
    ASSERT_TRUE(m.Download(back.data(), c.data(), 400).ok());
    EXPECT_EQ(back, v);
  };
  step();
  EXPECT_EQ(m.inner_allocations(), 3);
  EXPECT_EQ(m.cached_bytes(), 512u + 512 + 4096);  // rounded up to 256 bytes
  step();
  step();
  EXPECT_EQ(m.inner_allocations(), 3);
  EXPECT_EQ(inner.live, 3);
  m.ReleaseCached();
  EXPECT_EQ(inner.live, 0);
  EXPECT_EQ(m.cached_bytes(), 0u);
}

TEST(CachingMemoryTest, KeepsAtMostItsCapAndRetriesAfterReleasingWhenInnerRefuses) {
  LimitedMemory inner(4096);
  CachingMemory m(inner, /*max_cached_bytes=*/1024);
  void* big = m.Alloc(2048);
  void* small = m.Alloc(512);
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  m.Free(big);  // over the cap: returned to inner at once
  m.Free(small);
  EXPECT_EQ(m.cached_bytes(), 512u);
  EXPECT_EQ(inner.live, 1);
  EXPECT_EQ(m.Alloc(8192), nullptr);  // refused even after releasing the kept block
  EXPECT_EQ(inner.live, 0);
  EXPECT_EQ(m.cached_bytes(), 0u);
}

}  // namespace
}  // namespace g4
