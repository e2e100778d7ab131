// hub/sha256.h against FIPS 180-4's test vectors (and Python's hashlib for a file that spans
// several chunks and an odd split), and hub/progress.h's line format.
#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "hub/progress.h"
#include "hub/sha256.h"

namespace g4::hub {
namespace {

std::string Hash(const std::string& s) {
  Sha256 h;
  h.Update(s);
  return h.HexDigest();
}

TEST(Sha256, MatchesTheStandardVectors) {
  EXPECT_EQ(Hash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hash(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, SplitUpdatesAndFilesGiveTheSameDigest) {
  std::string data;
  for (int i = 0; i < 3000001; ++i) data += static_cast<char>(i * 7 + (i >> 9));
  Sha256 split;
  split.Update(data.substr(0, 63));
  split.Update(data.substr(63, 1));
  split.Update(data.substr(64, 1000));
  split.Update(data.substr(1064));
  const std::string whole = Hash(data);
  EXPECT_EQ(split.HexDigest(), whole);
  const std::string path = ::testing::TempDir() + "/g4_sha256_test.bin";
  std::ofstream(path, std::ios::binary) << data;
  auto f = Sha256OfFile(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*f, whole);
  EXPECT_FALSE(Sha256OfFile(path).ok());
}

TEST(Progress, LineHasBytesRateAndEta) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(12345), "12.3 kB");
  EXPECT_EQ(FormatBytes(45600000), "45.6 MB");
  EXPECT_EQ(FormatBytes(1200000000), "1.20 GB");
  EXPECT_EQ(FormatProgress("model.safetensors", 12300000, 45600000, 5100000, 6.5),
            "model.safetensors  12.3 MB / 45.6 MB  26%  5.1 MB/s  ETA 7s");
  EXPECT_EQ(FormatProgress("a.json", 0, 0, 0, -1), "a.json  0 B / 0 B");
}

}  // namespace
}  // namespace g4::hub
