#include "kernels/cuda/policy.h"

#include <cstdio>
#include <string>

namespace g4::cuda {
namespace {

std::string CcString(const DeviceInfo& d) {
  return std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor);
}

// Device names go into a space-separated key=value line.
std::string NoSpaces(std::string s) {
  for (char& c : s) {
    if (c == ' ') c = '_';
  }
  return s.empty() ? "unknown" : s;
}

std::string TileString(const W4A16Tile& t) {
  return std::to_string(t.bm) + "x" + std::to_string(t.bn) + "x" + std::to_string(t.bk) + "x" +
         std::to_string(t.stages);
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  constexpr int64_t kKi = 1024, kMi = kKi * 1024, kGi = kMi * 1024;
  char b[32];
  if (bytes >= kGi) {
    std::snprintf(b, sizeof b, "%.1fGiB", static_cast<double>(bytes) / static_cast<double>(kGi));
  } else if (bytes >= kMi && bytes % kMi == 0) {
    std::snprintf(b, sizeof b, "%lldMiB", static_cast<long long>(bytes / kMi));
  } else if (bytes >= kMi) {
    std::snprintf(b, sizeof b, "%.1fMiB", static_cast<double>(bytes) / static_cast<double>(kMi));
  } else if (bytes >= kKi && bytes % kKi == 0) {
    std::snprintf(b, sizeof b, "%lldKiB", static_cast<long long>(bytes / kKi));
  } else if (bytes >= kKi) {
    std::snprintf(b, sizeof b, "%.1fKiB", static_cast<double>(bytes) / static_cast<double>(kKi));
  } else {
    std::snprintf(b, sizeof b, "%lldB", static_cast<long long>(bytes));
  }
  return b;
}

DeviceLimits LimitsOf(const DeviceInfo& d) {
  DeviceLimits l;
  l.cc = d.cc();
  l.sm_count = d.sm_count;
  l.smem_default = d.smem_per_block;
  // A device that reports no opt-in (0) can still use its default.
  l.smem_optin = d.smem_per_block_optin > d.smem_per_block ? d.smem_per_block_optin
                                                            : d.smem_per_block;
  return l;
}

const AttentionPlan* DevicePolicy::AttentionFor(int64_t head_dim) const {
  for (int i = 0; i < 2; ++i) {
    if (kPolicyHeadDims[i] == head_dim) return &attention[i];
  }
  return nullptr;
}

StatusOr<DevicePolicy> ChoosePolicy(const DeviceInfo& d, int64_t w4a16_group) {
  const std::string who = "CUDA device '" + d.name + "' (cc " + CcString(d) + ")";
  if (d.cc() < kMinComputeCapability) {
    return InvalidArgument(who + " is below the minimum compute capability 7.5 (Turing)");
  }
  const DeviceLimits lim = LimitsOf(d);
  DevicePolicy p;
  p.device = d;
  p.compute = d.cc() >= 80 ? DType::kBF16 : DType::kF16;
  p.pdl = d.cc() >= 90;  // griddepcontrol is SM 9.0's
  p.w4a16_group = w4a16_group;
  // The tile depends on K only through K % group (validated again per weight at launch), so any
  // multiple of the group stands for every layer here.
  auto gemm = ChooseGemmTile(lim.smem_optin, lim.smem_default, lim.cc, 1);
  if (!gemm.ok()) return Status(gemm.status().code(), who + ": " + gemm.status().message());
  p.gemm_tile = *gemm;
  auto tile = ChooseW4A16Tile(lim.smem_optin, lim.smem_default, lim.cc, w4a16_group, w4a16_group);
  if (!tile.ok()) return Status(tile.status().code(), who + ": " + tile.status().message());
  p.w4a16_tile = *tile;
  for (int i = 0; i < 2; ++i) {
    auto plan = ChooseAttentionPlan(kPolicyHeadDims[i], lim.smem_optin, lim.smem_default);
    if (!plan.ok()) {
      return Status(plan.status().code(), who + ", head_dim " +
                                              std::to_string(kPolicyHeadDims[i]) + ": " +
                                              plan.status().message());
    }
    p.attention[i] = *plan;
  }
  return p;
}

std::string DevicePolicy::ToString() const {
  const DeviceInfo& d = device;
  std::string s = "device=" + NoSpaces(d.name) + " cc=" + CcString(d);
  s += " sms=" + std::to_string(d.sm_count);
  s += " mem=" + FormatBytes(d.global_mem_bytes);
  s += " l2=" + FormatBytes(d.l2_bytes);
  s += " smem=" + FormatBytes(d.smem_per_block);
  s += " smem_optin=" + FormatBytes(LimitsOf(d).smem_optin);
  s += std::string(" compute=") + (compute == DType::kF16 ? "f16" : "bf16");
  s += " gemm_tile=" + TileString(gemm_tile) + "(" + FormatBytes(gemm_tile.smem_bytes) + ")";
  s += " w4a16_tile=" + TileString(w4a16_tile) + "(" + FormatBytes(w4a16_tile.smem_bytes) + ")";
  for (int i = 0; i < 2; ++i) {
    s += " attn" + std::to_string(kPolicyHeadDims[i]) + "=bc" + std::to_string(attention[i].bc) +
         "(" + FormatBytes(attention[i].smem_bytes) + ")";
  }
  s += std::string(" pdl=") + (pdl ? "on" : "off");
  return s;
}

}  // namespace g4::cuda
