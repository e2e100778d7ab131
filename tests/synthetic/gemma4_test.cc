// `g4 make-model` checkpoints: the released E2B/E4B shapes exactly, the 31B features, sharding,
// both layouts, and deterministic seeded weights.
#include <gtest/gtest.h>

#include <filesystem>

#include "model/gemma4/config.h"
#include "model/gemma4/model.h"
#include "model/gemma4/tensors.h"
#include "synthetic/gemma4.h"

namespace g4 {
namespace {

namespace fs = std::filesystem;

fs::path TempCase(const std::string& name) {
  fs::path p = fs::path(::testing::TempDir()) / ("g4_synth_" + name);
  fs::remove_all(p);
  return p;
}

TEST(SyntheticTest, E2bTensorShapesAreTheReleasedOnes) {
  SyntheticOptions o;
  o.preset = "e2b";
  auto cfg = ParseGemma4Config(nlohmann::json::parse(SyntheticConfig(o)->dump()), nullptr);
  ASSERT_TRUE(cfg.ok());
  std::map<std::string, std::vector<int64_t>> shapes;
  int64_t params = 0;
  for (const TensorSlot& s : ListTensors(*cfg, nullptr)) {
    shapes[s.name] = s.shape;
    int64_t n = 1;
    for (int64_t d : s.shape) n *= d;
    params += n;
  }
  using V = std::vector<int64_t>;
  EXPECT_EQ(shapes["embed_tokens.weight"], (V{262144, 1536}));
  EXPECT_EQ(shapes["embed_tokens_per_layer.weight"], (V{262144, 8960}));
  EXPECT_EQ(shapes["per_layer_model_projection.weight"], (V{8960, 1536}));
  EXPECT_EQ(shapes["layers.0.self_attn.q_proj.weight"], (V{2048, 1536}));
  EXPECT_EQ(shapes["layers.4.self_attn.q_proj.weight"], (V{4096, 1536}));
  EXPECT_EQ(shapes["layers.4.self_attn.k_proj.weight"], (V{512, 1536}));
  EXPECT_EQ(shapes["layers.34.self_attn.k_proj.weight"], (V{512, 1536}));  // present, unused
  EXPECT_EQ(shapes["layers.14.mlp.gate_proj.weight"], (V{6144, 1536}));
  EXPECT_EQ(shapes["layers.15.mlp.gate_proj.weight"], (V{12288, 1536}));
  EXPECT_EQ(shapes["layers.15.mlp.down_proj.weight"], (V{1536, 12288}));
  EXPECT_EQ(shapes["layers.0.per_layer_input_gate.weight"], (V{256, 1536}));
  EXPECT_EQ(shapes["layers.0.layer_scalar"], (V{1}));
  // Text decoder of E2B: ~0.40B embedding + 2.35B PLE table + ~1.9B decoder.
  EXPECT_GT(params, 4'500'000'000);
  EXPECT_LT(params, 4'800'000'000);
}

TEST(SyntheticTest, ShardsAboveTheLimitAndLoadsBack) {
  const fs::path dir = TempCase("sharded");
  SyntheticOptions o;
  o.preset = "tiny";
  o.dtype = DType::kF32;
  o.max_shard_bytes = 64 * 1024;  // forces several shards on the tiny model
  ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
  EXPECT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));

  const fs::path single = TempCase("single");
  o.max_shard_bytes = uint64_t{4} << 30;
  ASSERT_TRUE(WriteSyntheticCheckpoint(o, single.string()).ok());

  auto a = Gemma4Model::Load(dir.string());
  auto b = Gemma4Model::Load(single.string());
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Backend be(BackendKind::kCpu, 2);
  const std::vector<int32_t> ids = {2, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  auto la = (*a)->Forward(be, ids);
  auto lb = (*b)->Forward(be, ids);
  ASSERT_TRUE(la.ok() && lb.ok());
  EXPECT_EQ(*la, *lb);  // same seed, same values, bit for bit
  fs::remove_all(dir);
  fs::remove_all(single);
}

TEST(SyntheticTest, TextOnlyLayoutAndKEqVRun) {
  const fs::path dir = TempCase("31b_like");
  SyntheticOptions o;
  o.preset = "31b-like";
  o.dtype = DType::kBF16;
  o.text_only_layout = true;
  ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
  auto m = Gemma4Model::Load(dir.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(WeightDTypes(**m), "bf16");
  EXPECT_TRUE((*m)->weights().layers[5].v_proj.empty());  // k_eq_v full layer
  Backend cpu(BackendKind::kCpu, 2), ref(BackendKind::kRef, 1);
  std::vector<int32_t> ids;
  for (int i = 0; i < 40; ++i) ids.push_back((i * 37 + 2) % 1024);  // crosses window 16
  auto a = (*m)->Forward(cpu, ids);
  auto b = (*m)->Forward(ref, ids);
  ASSERT_TRUE(a.ok() && b.ok());
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    ASSERT_TRUE(std::isfinite((*a)[i]));
    max_diff = std::max(max_diff, std::fabs(double((*a)[i]) - (*b)[i]));
    max_abs = std::max(max_abs, std::fabs(double((*b)[i])));
  }
  EXPECT_LE(max_diff, 1e-3 * max_abs);
  EXPECT_GT(max_abs, 0.1);  // not a dead network
  fs::remove_all(dir);
}

// The 26B-A4B features at toy size: the MoE block runs on ref and CPU alike, a decode token is
// counted as reading k of the E experts, and a device load binds it.
TEST(SyntheticTest, MoePresetRunsAndCountsOnlyTheChosenExperts) {
  const fs::path dir = TempCase("26b_a4b_like");
  SyntheticOptions o;
  o.preset = "26b-a4b-like";
  o.dtype = DType::kBF16;
  ASSERT_TRUE(WriteSyntheticCheckpoint(o, dir.string()).ok());
  auto m = Gemma4Model::Load(dir.string());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = (*m)->config();
  ASSERT_TRUE(c.moe());
  Backend cpu(BackendKind::kCpu, 2), ref(BackendKind::kRef, 1);
  std::vector<int32_t> ids;
  for (int i = 0; i < 21; ++i) ids.push_back((i * 37 + 2) % 1024);  // crosses window 16
  auto a = (*m)->Forward(cpu, ids);
  auto b = (*m)->Forward(ref, ids);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
  double max_diff = 0, max_abs = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(double((*a)[i]) - (*b)[i]));
    max_abs = std::max(max_abs, std::fabs(double((*b)[i])));
  }
  EXPECT_LE(max_diff, 1e-3 * max_abs);
  EXPECT_GT(max_abs, 0.1);

  // Bytes per decode token: of each layer's [E, 2I, H] and [E, H, I] bf16 experts, k of E.
  const int64_t E = c.num_experts, k = c.top_k_experts, I = c.moe_intermediate_size,
                H = c.hidden_size, L = c.num_layers;
  uint64_t experts_read = 0, experts_all = 0;
  for (const WeightEntry& w : (*m)->Weights()) {
    if (w.experts_read == 0) continue;
    EXPECT_EQ(w.experts_read, k) << w.name;
    experts_all += w.view->nbytes();
  }
  experts_read = experts_all / static_cast<uint64_t>(E) * static_cast<uint64_t>(k);
  EXPECT_EQ(experts_all, static_cast<uint64_t>(L * E * 3 * I * H * 2));
  uint64_t dense = 0;
  for (const WeightEntry& w : (*m)->Weights()) {
    if (w.experts_read == 0 && !w.gathered) dense += w.view->nbytes() + w.view->scale_nbytes();
    if (w.gathered) dense += w.view->nbytes() / static_cast<uint64_t>(w.view->dim(0));
  }
  const TensorView& head = (*m)->lm_head();
  EXPECT_EQ(DecodeWeightBytes(**m), dense + experts_read + head.nbytes() + head.scale_nbytes());

  // A device load binds the MoE layers too (the CUDA Moe kernel, kernels/cuda/moe.cu).
  LoadOptions on_device;
  on_device.device = true;
  auto d = Gemma4Model::Load(dir.string(), on_device);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace g4
