// W4A16 checkpoints end to end: `make-model --quant w4a16` writes the compressed-tensors format
// (quantized from the same random weights as the float checkpoint: each dequantized weight is
// within half an int4 step of the bf16 original); the model loads it with the forward pass
// unchanged, and its logits match the same model with the dequantized weights stored as f32
// (the math is the same, only f32 summation order differs), on the cpu and ref backends. The
// same for an MoE model (26b-a4b-like), whose expert stacks are written as the Gemma 4 26B
// export keeps them (experts.gate_up_proj_packed [E, 2I, H/8], ..._scale, ..._shape).
// Also: the load-time LM head copies (q8, q4) and the logits error they cost; groups of 32 on the
// Q4_0 panels of int8 activations.
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

#include "core/thread_pool.h"
#include "loader/safetensors.h"
#include "loader/safetensors_writer.h"
#include "loader/weight_store.h"
#include "model/gemma4/model.h"
#include "model/gemma4/tensors.h"
#include "model/model_test_util.h"
#include "ops/quantize.h"
#include "synthetic/gemma4.h"

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
SyntheticOptions TinyOptions(const std::string& quant, const std::string& preset = "tiny") {
  SyntheticOptions o;
  o.preset = preset;
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

// Writes `model`'s weights as an f32 checkpoint (same config, no quantization_config) into dir:
// quantized tensors dequantized, float ones as src_dir's files store them (the model holds some
// transformed at load, e.g. an MoE router.scale folded with H^-0.5).
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
  auto store = WeightStore::OpenDir(src_dir.string());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<TensorSpec> specs;
  std::vector<TensorView> views;
  for (const TensorSlot& s : slots) {
    if (!s.view) continue;  // unused k/v of KV-shared layers: the model never reads them
    const std::string name = "model.language_model." + s.name;
    specs.push_back({name, DType::kF32, s.shape});
    const TensorInfo* stored = (*store)->Find(name);
    views.push_back(s.view->quantized() || stored == nullptr ? *s.view : stored->view());
  }
  auto fill = [&](size_t i, ByteSink& sink) -> Status {
    std::vector<float> v(static_cast<size_t>(views[i].numel()));
    for (size_t k = 0; k < v.size(); ++k) v[k] = views[i].at(static_cast<int64_t>(k));
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

// A checkpoint's folder tag: "bf16" for the tiny preset (the other tests' names),
// "26b-a4b-like-bf16" for the MoE one.
std::string Tag(const std::string& preset, const std::string& what) {
  return preset == "tiny" ? what : preset + "-" + what;
}

class QuantModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* preset : {"tiny", "26b-a4b-like"}) {
      for (const char* q : {"", "w4a16"}) {
        const fs::path dir = TestDir(Tag(preset, *q ? q : "bf16"));
        fs::remove_all(dir);
        ASSERT_TRUE(WriteSyntheticCheckpoint(TinyOptions(q, preset), dir.string()).ok());
      }
    }
  }
  static void TearDownTestSuite() {
    for (const char* preset : {"tiny", "26b-a4b-like"}) {
      for (const char* what : {"bf16", "w4a16", "deq"}) fs::remove_all(TestDir(Tag(preset, what)));
    }
  }
};

// Every quantized tensor of the W4A16 checkpoint of `preset` is within half an int4 step of
// the float checkpoint's; returns how many were quantized.
int CheckWithinHalfAStep(const std::string& preset) {
  auto bf16 = LoadOrDie(TestDir(Tag(preset, "bf16")), HeadMode::kAsStored);
  auto w4 = LoadOrDie(TestDir(Tag(preset, "w4a16")), HeadMode::kAsStored);
  EXPECT_TRUE(bf16 && w4);
  if (!bf16 || !w4) return 0;
  ModelWeights wb = bf16->weights(), wq = w4->weights();
  const auto sb = ListTensors(bf16->config(), &wb), sq = ListTensors(w4->config(), &wq);
  EXPECT_EQ(sb.size(), sq.size());
  int quantized = 0;
  for (size_t i = 0; i < sb.size() && i < sq.size(); ++i) {
    if (!sb[i].view) continue;
    const TensorView& f = *sb[i].view;
    const TensorView& q = *sq[i].view;
    EXPECT_EQ(q.shape, f.shape) << sb[i].name;
    if (!q.quantized()) {
      EXPECT_EQ(std::memcmp(q.data, f.data, f.nbytes()), 0) << sb[i].name << " changed";
      // Only linears whose width 16 does not divide (per_layer_projection, K = 8) and MoE
      // routers stay float.
      if (sb[i].linear() && !sb[i].name.ends_with("router.proj.weight")) {
        EXPECT_NE(sb[i].shape[1] % 16, 0) << sb[i].name;
      }
      continue;
    }
    ++quantized;
    EXPECT_EQ(q.quant.kind, QuantKind::kInt4Group);
    EXPECT_EQ(q.quant.group_size, 16);
    EXPECT_EQ(q.quant.scale_dtype, DType::kBF16);
    const int64_t K = q.shape.back();
    for (int64_t e = 0; e < q.numel(); ++e) {
      const float scale =
          LoadAsF32(q.quant.scales, DType::kBF16, (e / K) * (K / 16) + (e % K) / 16);
      // Half a step (+ the bf16 rounding of the scale at the clamp), + the bf16 rounding of the
      // float original (the writer quantizes the f32 value).
      const float bound = 0.53f * scale + std::fabs(f.at(e)) * (1.0f / 256);
      if (std::fabs(q.at(e) - f.at(e)) > bound) {
        ADD_FAILURE() << sb[i].name << " element " << e << ": " << q.at(e) << " vs " << f.at(e);
        return quantized;
      }
    }
  }
  return quantized;
}

// The W4A16 checkpoint of `preset` against itself dequantized to f32, on both backends.
void CheckMatchesDequantized(const std::string& preset) {
  const fs::path w4_dir = TestDir(Tag(preset, "w4a16"));
  const fs::path deq_dir = TestDir(Tag(preset, "deq"));
  // The same bf16 head on both sides.
  auto w4 = LoadOrDie(w4_dir, HeadMode::kAsStored);
  ASSERT_TRUE(w4);
  WriteDequantized(*w4, w4_dir, deq_dir);
  auto deq = LoadOrDie(deq_dir, HeadMode::kAsStored);
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
  std::printf("%s w4a16 vs dequantized: ref %.3g, cpu %.3g of max |logit|\n", preset.c_str(),
              MaxAbsDiff(ref_w4, ref_deq) / scale, MaxAbsDiff(cpu_w4, cpu_deq) / scale);
  // Decode-shaped calls (T = 1, the fused dequantize-dot kernel) on the last position.
  Backend be(BackendKind::kCpu, 2);
  auto last = w4->Forward(be, std::vector<int32_t>{kIds[0]});
  auto last_ref = deq->Forward(be, std::vector<int32_t>{kIds[0]});
  ASSERT_TRUE(last.ok() && last_ref.ok());
  EXPECT_LE(MaxAbsDiff(*last, *last_ref), 1e-3 * scale);
}

TEST_F(QuantModelTest, WriterQuantizesTheFloatWeightsWithinHalfAStep) {
  EXPECT_GT(CheckWithinHalfAStep("tiny"), 50);  // q/k/v/o/gate/up/down/ple_gate of 10 layers
}

TEST_F(QuantModelTest, LogitsMatchTheDequantizedModelOnBothBackends) {
  CheckMatchesDequantized("tiny");
}

// MoE: the expert stacks are quantized too (packed slice by slice), bound as int4-group
// [E, N, K] views, and the experts' kernels read their slices as the float path does.
TEST_F(QuantModelTest, MoeExpertStacksAreQuantizedWithinHalfAStep) {
  auto w4 = LoadOrDie(TestDir(Tag("26b-a4b-like", "w4a16")), HeadMode::kAsStored);
  ASSERT_TRUE(w4);
  for (const LayerWeights& l : w4->weights().layers) {
    ASSERT_EQ(l.experts_gate_up.quant.kind, QuantKind::kInt4Group);
    ASSERT_EQ(l.experts_down.quant.kind, QuantKind::kInt4Group);
    ASSERT_EQ(l.experts_gate_up.shape.size(), 3u);
  }
  // 10 sliding layers: q/k/v/o/gate/up/down and 2 expert stacks; 2 full (k_eq_v) layers: no
  // v_proj. The routers stay bf16, as in the released exports.
  EXPECT_EQ(CheckWithinHalfAStep("26b-a4b-like"), 10 * 9 + 2 * 8);
  EXPECT_FALSE(w4->weights().layers[0].router_proj.quantized());
}

TEST_F(QuantModelTest, MoeLogitsMatchTheDequantizedModelOnBothBackends) {
  CheckMatchesDequantized("26b-a4b-like");
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
  // With int8 activations a bf16 head (never packed) becomes Q8_0 blocks, which the integer
  // kernels read; MatMulQ8a then gives the int8-activation matmul of that copy.
  LoadOptions int8;
  int8.int8_matvec = true;
  int8.pack_weight = Backend(BackendKind::kCpu, 1, MatVec::kQ8).weight_packer();
  auto w4_int8 = Gemma4Model::Load(TestDir("w4a16").string(), int8);
  ASSERT_TRUE(w4_int8.ok()) << w4_int8.status().ToString();
  EXPECT_EQ((*w4_int8)->weights().lm_head.quant.kind, QuantKind::kQ8_0);
  EXPECT_EQ((*w4_int8)->weights().lm_head.shape, (*w4_int8)->weights().embed.shape);
}

// With int8 activations a float head whose hidden size is whole blocks of 256 (the MoE model's
// 256) becomes Q6_K blocks where this CPU packs them, the head llama.cpp's Q4 files carry; the
// tiny model's 64 stays Q8_0 (above).
TEST_F(QuantModelTest, Int8ActivationsTakeAQ6KHeadWhereItIsPacked) {
  LoadOptions int8;
  int8.int8_matvec = true;
  int8.pack_weight = Backend(BackendKind::kCpu, 1, MatVec::kQ8).weight_packer();
  ThreadPool pool(1);
  const std::vector<float> rows(16 * 256, 0.25f);
  auto q6k = QuantizeWeight(pool, TensorView(rows.data(), DType::kF32, {16, 256}), QuantKind::kQ6_K,
                            0, DType::kF32);
  ASSERT_TRUE(q6k.ok()) << q6k.status().ToString();
  const bool packed = int8.pack_weight != nullptr && int8.pack_weight(pool, q6k->view).panels;
  auto m = Gemma4Model::Load(TestDir(Tag("26b-a4b-like", "w4a16")).string(), int8);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const TensorView& head = (*m)->weights().lm_head;
  EXPECT_EQ(head.quant.kind, packed ? QuantKind::kQ6_K : QuantKind::kQ8_0);
  EXPECT_EQ(head.quant.panels != nullptr, packed);
  EXPECT_EQ(head.shape, (*m)->weights().embed.shape);
}

// W4A16's groups of 32 are Q4_0's grid: with int8 activations (MatVec::kQ8) every quantized
// linear and expert stack is packed at load as Q4_0 panels (kernels/cpu/matmul_q8a_int4.h).
// Returns the model loaded so, or null (and skips) where this CPU has no panel kernel.
std::unique_ptr<Gemma4Model> LoadGroup32OnPanels(const std::string& preset, Backend& q8) {
  const fs::path dir = TestDir(Tag(preset, "w4a16g32"));
  fs::remove_all(dir);
  SyntheticOptions o = TinyOptions("w4a16", preset);
  o.quant_group = 32;
  EXPECT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
  if (q8.PolicyString().find("matvec=q8:scalar") != std::string::npos) {
    fs::remove_all(dir);
    return nullptr;
  }
  LoadOptions options;
  options.int8_matvec = true;
  options.pack_weight = q8.weight_packer();
  auto m = Gemma4Model::Load(dir.string(), options);
  fs::remove_all(dir);  // the panels are the model's own memory; unpacked slots are not read
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return nullptr;
  ModelWeights w = (*m)->weights();
  int packed = 0;
  for (const TensorSlot& s : ListTensors((*m)->config(), &w)) {
    if (s.view == nullptr || s.view->quant.kind != QuantKind::kInt4Group) continue;
    EXPECT_NE(s.view->quant.panels, nullptr) << s.name;
    packed += s.view->quant.panels != nullptr;
  }
  std::printf("%s: %d int4 weights on panels\n", preset.c_str(), packed);
  EXPECT_GT(packed, 0);
  return std::move(*m);
}

// The CPU's logits on the panels are the ref's int8-activation logits on the int4 rows (to f32
// summation order), with the same top-1 at every position.
TEST_F(QuantModelTest, Group32LinearsRunOnQ4_0PanelsWithInt8Activations) {
  Backend q8(BackendKind::kCpu, 2, MatVec::kQ8), ref_q8(BackendKind::kRef, 1, MatVec::kQ8);
  auto m = LoadGroup32OnPanels("tiny", q8);
  if (!m) GTEST_SKIP() << "no panel kernel on this CPU";
  auto got = m->Forward(q8, kIds);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  auto want = m->Forward(ref_q8, kIds);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const double err = MaxAbsDiff(*got, *want) / MaxAbs(*want);
  std::printf("max |cpu - ref| = %.3g of max |logit|\n", err);
  EXPECT_LE(err, 1e-3);
  const int64_t V = m->config().vocab_size;
  EXPECT_EQ(Argmaxes(*got, V), Argmaxes(*want, V));
}

// Expert stacks too, each expert's slice on its own panels (the ref table's Moe stays in f64, so
// the kernel test moe_test.cc checks MoeQ8a's values on them).
TEST_F(QuantModelTest, Group32ExpertStacksArePackedAsQ4_0Panels) {
  Backend q8(BackendKind::kCpu, 2, MatVec::kQ8);
  auto m = LoadGroup32OnPanels("26b-a4b-like", q8);
  if (!m) GTEST_SKIP() << "no panel kernel on this CPU";
  EXPECT_EQ(m->weights().layers[0].experts_gate_up.quant.panel_rows, 16);
  auto logits = m->Forward(q8, kIds);
  ASSERT_TRUE(logits.ok()) << logits.status().ToString();
  for (float v : *logits) ASSERT_TRUE(std::isfinite(v));
}

// The logits error of the quantized head copies against the same W4A16 model with its bf16 head,
// relative to max |logit|, over 11 positions (measured: q8 0.6%, q4 13%, q8_0 0.6% on this random
// tiny model; docs/speed.md has the E2B figures from `g4 bench --head-error`).
TEST_F(QuantModelTest, QuantizedHeadErrorIsSmall) {
  std::vector<float> base;
  base = Logits(*LoadOrDie(TestDir("w4a16"), HeadMode::kAsStored), BackendKind::kCpu);
  const double scale = MaxAbs(base);
  for (auto [mode, bound] :
       {std::pair{HeadMode::kQ8, 0.01}, {HeadMode::kQ4, 0.25}, {HeadMode::kQ8_0, 0.01}}) {
    const std::vector<float> l = Logits(*LoadOrDie(TestDir("w4a16"), mode), BackendKind::kCpu);
    const double err = MaxAbsDiff(l, base) / scale;
    std::printf("head %s: max |logits - bf16 head| = %.3g of max |logit|\n", HeadModeName(mode), err);
    EXPECT_LE(err, bound) << HeadModeName(mode);
  }
}

// The Q6_K head copy (llama.cpp's head in its Q4 files) on the MoE model, whose hidden size of
// 256 is one Q6_K block: its error beside the Q8_0 copy's (measured on this random model: q8_0
// 0.5%, q6_k 2.1% of max |logit|). The tiny model's 64 cannot be Q6_K blocks: its load fails
// and says why.
TEST_F(QuantModelTest, Q6KHeadErrorIsSmallAndNeedsBlocksOf256) {
  const fs::path dir = TestDir(Tag("26b-a4b-like", "w4a16"));
  const std::vector<float> base = Logits(*LoadOrDie(dir, HeadMode::kAsStored), BackendKind::kCpu);
  const double scale = MaxAbs(base);
  for (auto [mode, bound] : {std::pair{HeadMode::kQ8_0, 0.01}, {HeadMode::kQ6_K, 0.04}}) {
    const std::vector<float> l = Logits(*LoadOrDie(dir, mode), BackendKind::kCpu);
    ASSERT_EQ(l.size(), base.size());
    const double err = MaxAbsDiff(l, base) / scale;
    std::printf("head %s: max |logits - bf16 head| = %.3g of max |logit|\n", HeadModeName(mode),
                err);
    EXPECT_LE(err, bound) << HeadModeName(mode);
    EXPECT_GT(err, 0) << HeadModeName(mode);  // a copy was made and used
  }
  LoadOptions options;
  options.head = HeadMode::kQ6_K;
  auto tiny = Gemma4Model::Load(TestDir("w4a16").string(), options);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("LM head"), std::string::npos) << tiny.status().message();
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
