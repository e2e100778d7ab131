// W4A16 checkpoints end to end: `make-model --quant w4a16` writes the compressed-tensors format
// (quantized from the same random weights as the float checkpoint: each dequantized weight is
// within half an int4 step of the bf16 original); the model loads it with the forward pass
// unchanged, and its logits match the same model with the dequantized weights stored as f32
// (the math is the same, only f32 summation order differs), on the cpu and ref backends.
// Also: the load-time LM head copies (q8, q4) and the logits error they cost.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include <unistd.h>

#include "loader/safetensors.h"
#include "loader/safetensors_writer.h"
#include "model/gemma4/model.h"
#include "model/gemma4/tensors.h"
#include "model/model_test_util.h"
#include "model/gemma4/synthetic.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

// Per process: ctest runs the tests of one suite in parallel processes.
fs::path TestDir(const std::string& name) {
  return fs::path(::testing::TempDir()) /
         ("g4_quant_" + std::to_string(getpid()) + "_" + name);
}

// The tiny preset with groups of 16, so every linear of it (K = 64, 96, 192, 8 -> no) is
// quantized except the 8-wide PLE projection, which lands in the ignore list.
SyntheticOptions TinyOptions(const std::string& quant) {
  SyntheticOptions o;
  o.preset = "tiny";
  o.seed = 11;
  o.quant = quant;
  o.quant_group = 16;
  return o;
}

std::unique_ptr<Gemma4Model> LoadOrDie(const fs::path& dir, HeadMode head = HeadMode::kAuto,
                                       bool device = false) {
  LoadOptions options;
  options.head = head;
  options.device = device;
  auto m = Gemma4Model::Load(dir.string(), options);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : nullptr;
}

// Writes `model`'s weights, dequantized, as an f32 checkpoint (same config, no
// quantization_config) into dir.
void WriteDequantized(const Gemma4Model& model, const fs::path& src_dir, const fs::path& dir) {
  fs::create_directories(dir);
  std::ifstream in(src_dir / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  config.erase("quantization_config");
  config["dtype"] = "float32";
  std::ofstream(dir / "config.json") << config.dump(2);
  fs::copy_file(src_dir / "generation_config.json", dir / "generation_config.json",
                fs::copy_options::overwrite_existing);
  ModelWeights w = model.weights();
  const std::vector<TensorSlot> slots = ListTensors(model.config(), &w);
  std::vector<TensorSpec> specs;
  std::vector<const TensorView*> views;
  for (const TensorSlot& s : slots) {
    if (!s.view) continue;  // unused k/v of KV-shared layers: the model never reads them
    specs.push_back({"model.language_model." + s.name, DType::kF32, s.shape});
    views.push_back(s.view);
  }
  auto fill = [&](size_t i, ByteSink& sink) -> Status {
    std::vector<float> v(static_cast<size_t>(views[i]->numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = views[i]->at(static_cast<int64_t>(k));
    return sink.Write(v.data(), v.size() * sizeof(float));
  };
  ASSERT_TRUE(WriteSafetensors((dir / "model.safetensors").string(), specs, fill).ok());
}

const std::vector<int32_t> kIds = {2, 17, 33, 7, 256, 101, 3, 480, 9, 64, 5};

std::vector<float> Logits(const Gemma4Model& m, BackendKind kind) {
  Backend be(kind, 2);
  auto logits = m.Forward(be, kIds);
  EXPECT_TRUE(logits.ok()) << logits.status().ToString();
  return logits.ok() ? *logits : std::vector<float>();
}

double MaxAbs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}
double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
  return m;
}
std::vector<int> Argmaxes(const std::vector<float>& logits, int64_t V) {
  std::vector<int> out;
  for (size_t t = 0; t * V < logits.size(); ++t) {
    const float* row = logits.data() + t * V;
    out.push_back(static_cast<int>(std::max_element(row, row + V) - row));
  }
  return out;
}

class QuantModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* q : {"", "w4a16"}) {
      const fs::path dir = TestDir(*q ? q : "bf16");
      fs::remove_all(dir);
      ASSERT_TRUE(WriteSyntheticCheckpoint(TinyOptions(q), dir.string()).ok());
    }
  }
  static void TearDownTestSuite() {
    fs::remove_all(TestDir("bf16"));
    fs::remove_all(TestDir("w4a16"));
    fs::remove_all(TestDir("deq"));
  }
};

TEST_F(QuantModelTest, WriterQuantizesTheFloatWeightsWithinHalfAStep) {
  auto bf16 = LoadOrDie(TestDir("bf16"), HeadMode::kAsStored);
  auto w4 = LoadOrDie(TestDir("w4a16"), HeadMode::kAsStored);
  ASSERT_TRUE(bf16 && w4);
  ModelWeights wb = bf16->weights(), wq = w4->weights();
  const auto sb = ListTensors(bf16->config(), &wb), sq = ListTensors(w4->config(), &wq);
  ASSERT_EQ(sb.size(), sq.size());
  int quantized = 0;
  for (size_t i = 0; i < sb.size(); ++i) {
    if (!sb[i].view) continue;
    const TensorView& f = *sb[i].view;
    const TensorView& q = *sq[i].view;
    ASSERT_EQ(q.shape, f.shape) << sb[i].name;
    if (!q.quantized()) {
      EXPECT_EQ(std::memcmp(q.data, f.data, f.nbytes()), 0) << sb[i].name << " changed";
      // Only linears whose width 16 does not divide (per_layer_projection, K = 8) stay float.
      if (sb[i].linear()) {
        EXPECT_NE(sb[i].shape[1] % 16, 0) << sb[i].name;
      }
      continue;
    }
    ++quantized;
    EXPECT_EQ(q.quant.kind, QuantKind::kInt4Group);
    EXPECT_EQ(q.quant.group_size, 16);
    EXPECT_EQ(q.quant.scale_dtype, DType::kBF16);
    const int64_t K = q.dim(1);
    for (int64_t e = 0; e < q.numel(); ++e) {
      const float scale =
          LoadAsF32(q.quant.scales, DType::kBF16, (e / K) * (K / 16) + (e % K) / 16);
      // Half a step (+ the bf16 rounding of the scale at the clamp), + the bf16 rounding of the
      // float original (the writer quantizes the f32 value).
      const float bound = 0.53f * scale + std::fabs(f.at(e)) * (1.0f / 256);
      ASSERT_LE(std::fabs(q.at(e) - f.at(e)), bound) << sb[i].name << " element " << e;
    }
  }
  EXPECT_GT(quantized, 50);  // q/k/v/o/gate/up/down/ple_gate of 10 layers + ple_model_proj
}

TEST_F(QuantModelTest, LogitsMatchTheDequantizedModelOnBothBackends) {
  // The same bf16 head on both sides.
  auto w4 = LoadOrDie(TestDir("w4a16"), HeadMode::kAsStored);
  ASSERT_TRUE(w4);
  WriteDequantized(*w4, TestDir("w4a16"), TestDir("deq"));
  auto deq = LoadOrDie(TestDir("deq"), HeadMode::kAsStored);
  ASSERT_TRUE(deq);
  const int64_t V = w4->config().vocab_size;
  const std::vector<float> ref_deq = Logits(*deq, BackendKind::kRef);
  const double scale = MaxAbs(ref_deq);
  ASSERT_GT(scale, 0.0);
  // ref vs ref: identical weights, f64 accumulation in both: agreement to f32 rounding.
  const std::vector<float> ref_w4 = Logits(*w4, BackendKind::kRef);
  EXPECT_LE(MaxAbsDiff(ref_w4, ref_deq), 1e-5 * scale);
  // cpu (fused int4 kernels, T = 11 takes the panel path) vs the f64 oracle: golden tolerance.
  const std::vector<float> cpu_w4 = Logits(*w4, BackendKind::kCpu);
  EXPECT_LE(MaxAbsDiff(cpu_w4, ref_deq), 1e-3 * scale);
  EXPECT_EQ(Argmaxes(cpu_w4, V), Argmaxes(ref_deq, V));
  const std::vector<float> cpu_deq = Logits(*deq, BackendKind::kCpu);
  EXPECT_LE(MaxAbsDiff(cpu_w4, cpu_deq), 1e-3 * scale);
  // Decode-shaped calls (T = 1, the fused dequantize-dot kernel) on the last position.
  Backend be(BackendKind::kCpu, 2);
  auto last = w4->Forward(be, std::vector<int32_t>{kIds[0]});
  auto last_ref = deq->Forward(be, std::vector<int32_t>{kIds[0]});
  ASSERT_TRUE(last.ok() && last_ref.ok());
  EXPECT_LE(MaxAbsDiff(*last, *last_ref), 1e-3 * scale);
}

TEST_F(QuantModelTest, AutoHeadIsQ8ForW4A16AndAsStoredForFloat) {
  auto w4 = LoadOrDie(TestDir("w4a16"));
  auto bf16 = LoadOrDie(TestDir("bf16"));
  ASSERT_TRUE(w4 && bf16);
  EXPECT_EQ(w4->weights().lm_head.quant.kind, QuantKind::kInt8Group);
  EXPECT_EQ(StorageName(w4->weights().lm_head), "int8row/f32");
  EXPECT_EQ(bf16->weights().lm_head.data, bf16->weights().embed.data);
  // Bytes per decode token count the head as bound: the int8 copy is half the bf16 table.
  const uint64_t b_q8 = DecodeWeightBytes(*w4);
  auto w4b = LoadOrDie(TestDir("w4a16"), HeadMode::kAsStored);
  const uint64_t b_bf16 = DecodeWeightBytes(*w4b);
  const int64_t V = w4->config().vocab_size, H = w4->config().hidden_size;
  EXPECT_EQ(b_bf16 - b_q8, static_cast<uint64_t>(V * H * 2 - (V * H + V * 4)));
  // On a device, auto keeps the stored head (the int8 row matmul runs on the host there);
  // explicit modes stay.
  auto on_device = LoadOrDie(TestDir("w4a16"), HeadMode::kAuto, /*device=*/true);
  ASSERT_TRUE(on_device);
  EXPECT_EQ(on_device->weights().lm_head.data, on_device->weights().embed.data);
  auto q8_on_device = LoadOrDie(TestDir("w4a16"), HeadMode::kQ8, /*device=*/true);
  ASSERT_TRUE(q8_on_device);
  EXPECT_EQ(q8_on_device->weights().lm_head.quant.kind, QuantKind::kInt8Group);
}

// The logits error of the quantized head copies against the same W4A16 model with its bf16 head,
// relative to max |logit|, over 11 positions (measured: q8 0.6%, q4 13% on this random tiny
// model; docs/speed.md has the E2B figures from `g4 bench --head-error`).
TEST_F(QuantModelTest, QuantizedHeadErrorIsSmall) {
  std::vector<float> base;
  base = Logits(*LoadOrDie(TestDir("w4a16"), HeadMode::kAsStored), BackendKind::kCpu);
  const double scale = MaxAbs(base);
  for (auto [mode, bound] : {std::pair{HeadMode::kQ8, 0.01}, {HeadMode::kQ4, 0.25}}) {
    const std::vector<float> l = Logits(*LoadOrDie(TestDir("w4a16"), mode), BackendKind::kCpu);
    const double err = MaxAbsDiff(l, base) / scale;
    std::printf("head %s: max |logits - bf16 head| = %.3g of max |logit|\n", HeadModeName(mode), err);
    EXPECT_LE(err, bound) << HeadModeName(mode);
  }
}

// Tensor-level errors of a pack-quantized checkpoint name the tensor and what was expected.
class QuantLoadErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TestDir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ASSERT_TRUE(WriteSyntheticCheckpoint(TinyOptions("w4a16"), dir_.string()).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Rewrites model.safetensors: `edit` may rename, reshape or drop (return false) a tensor;
  // `extra` specs are appended (zero-filled).
  void Rewrite(const std::function<bool(TensorSpec&)>& edit, std::vector<TensorSpec> extra = {}) {
    model_test::RewriteSafetensors(dir_, edit, std::move(extra));
  }

  Status LoadStatus() { return Gemma4Model::Load(dir_.string()).status(); }

  fs::path dir_;
};

const std::string kUp = "model.language_model.layers.2.mlp.up_proj";

TEST_F(QuantLoadErrorsTest, MissingScaleIsNamed) {
  Rewrite([](TensorSpec& s) { return s.name != kUp + ".weight_scale"; });
  EXPECT_THAT(LoadStatus().message(), ::testing::HasSubstr("missing tensor " + kUp + ".weight_scale"));
}

TEST_F(QuantLoadErrorsTest, WrongPackedShapeIsNamed) {
  Rewrite([](TensorSpec& s) {
    if (s.name == kUp + ".weight_packed") s.shape[1] += 1;
    return true;
  });
  const Status s = LoadStatus();
  EXPECT_THAT(s.message(), ::testing::HasSubstr("tensor " + kUp + ".weight_packed"));
  EXPECT_THAT(s.message(), ::testing::HasSubstr("expected I32 [96, 8]"));
}

TEST_F(QuantLoadErrorsTest, WrongScaleShapeNamesTheGroup) {
  Rewrite([](TensorSpec& s) {
    if (s.name == kUp + ".weight_scale") s.shape[1] = 2;
    return true;
  });
  EXPECT_THAT(LoadStatus().message(),
              ::testing::HasSubstr("expected F32/BF16/F16 [96, 4] (group_size 16)"));
}

TEST_F(QuantLoadErrorsTest, WeightShapeMustMatchTheConfig) {
  Rewrite([](TensorSpec& s) { return s.name != kUp + ".weight_shape"; },
          {TensorSpec{kUp + ".weight_shape", DType::kI64, {2}}});  // holds [0, 0]
  EXPECT_THAT(LoadStatus().message(),
              ::testing::HasSubstr(kUp + ".weight_shape (" ));
}

TEST_F(QuantLoadErrorsTest, ZeroPointsAreRefused) {
  Rewrite([](TensorSpec&) { return true; },
          {TensorSpec{kUp + ".weight_zero_point", DType::kI32, {12, 4}}});
  const Status s = LoadStatus();
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("asymmetric (zero-point) checkpoints"));
}

TEST_F(QuantLoadErrorsTest, GIdxIsRefused) {
  Rewrite([](TensorSpec&) { return true; },
          {TensorSpec{kUp + ".weight_g_idx", DType::kI32, {64}}});
  EXPECT_THAT(LoadStatus().message(), ::testing::HasSubstr("act-order (g_idx)"));
}

TEST_F(QuantLoadErrorsTest, PackedWithoutQuantizationConfigIsRefused) {
  std::ifstream in(dir_ / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  in.close();
  config.erase("quantization_config");
  std::ofstream(dir_ / "config.json") << config.dump(2);
  EXPECT_THAT(LoadStatus().message(), ::testing::HasSubstr("config.json has no quantization_config"));
}

TEST_F(QuantLoadErrorsTest, UnsupportedConfigIsRefusedNamingTheField) {
  std::ifstream in(dir_ / "config.json");
  nlohmann::json config = nlohmann::json::parse(in);
  in.close();
  config["quantization_config"]["config_groups"]["group_0"]["weights"]["symmetric"] = false;
  std::ofstream(dir_ / "config.json") << config.dump(2);
  EXPECT_THAT(LoadStatus().message(),
              ::testing::HasSubstr("quantization_config.config_groups.group_0.weights.symmetric"));
}

}  // namespace
}  // namespace g4
