// FormatProfile / ProfileJson (see profile_report.h).
#include "profile_report.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace g4::cli {
namespace {

struct Row {
  std::string name;
  double seconds;
  double calls;  // per step; < 0: not an op
};

// Every category with time in it, then other and sampling; largest first.
std::vector<Row> Rows(const DecodeProfile& p) {
  std::vector<Row> rows;
  const double steps = std::max<double>(1, static_cast<double>(p.steps));
  for (int c = 0; c < OpProfiler::kNumCategories; ++c) {
    const auto cat = static_cast<OpProfiler::Category>(c);
    if (p.ops->calls(cat) == 0) continue;
    std::string name = OpProfiler::CategoryName(cat);
    if (cat == OpProfiler::kLmHead && !p.ops->lm_head_storage().empty()) {
      name += " (" + p.ops->lm_head_storage() + ")";
    }
    rows.push_back({name, p.ops->seconds(cat), static_cast<double>(p.ops->calls(cat)) / steps});
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  rows.push_back({"other (in forward)", std::max(0.0, p.forward_seconds - p.ops->total_seconds()), -1});
  rows.push_back({"sampling", p.sampling_seconds, -1});
  return rows;
}

}  // namespace

std::string FormatProfile(const DecodeProfile& p) {
  const double steps = std::max<double>(1, static_cast<double>(p.steps));
  const double total = p.forward_seconds + p.sampling_seconds;
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "%s profile: %lld %s, %.2f ms/token, %.0f ops/token\n",
                p.label, static_cast<long long>(p.steps), p.unit, 1e3 * total / steps,
                static_cast<double>(p.ops->ops()) / steps);
  out += line;
  for (const Row& r : Rows(p)) {
    std::snprintf(line, sizeof line, "  %-28s %9.3f ms/tok %6.1f%%", r.name.c_str(),
                  1e3 * r.seconds / steps, total > 0 ? 100.0 * r.seconds / total : 0.0);
    out += line;
    if (r.calls >= 0) {
      std::snprintf(line, sizeof line, "  (%.0f calls/tok)", r.calls);
      out += line;
    }
    out += '\n';
  }
  return out;
}

nlohmann::ordered_json ProfileJson(const DecodeProfile& p) {
  const double steps = std::max<double>(1, static_cast<double>(p.steps));
  const double total = p.forward_seconds + p.sampling_seconds;
  nlohmann::ordered_json ms, pct;
  for (const Row& r : Rows(p)) {
    ms[r.name] = 1e3 * r.seconds / steps;
    pct[r.name] = total > 0 ? 100.0 * r.seconds / total : 0.0;
  }
  nlohmann::ordered_json j;
  j["steps"] = p.steps;
  j["ops_per_token"] = static_cast<double>(p.ops->ops()) / steps;
  j["ms_per_token"] = ms;
  j["percent"] = pct;
  j["lm_head_storage"] = p.ops->lm_head_storage();
  return j;
}

void AttachDecodeProfiler(Backend& backend, OpProfiler& profiler, int64_t vocab,
                          GenerationCallbacks& cb) {
  profiler.set_lm_head_rows(vocab);
  profiler.set_enabled(false);
  backend.SetProfiler(&profiler);
  ProgressFn inner = cb.on_prefill_progress;
  cb.on_prefill_progress = [&profiler, inner](int64_t done, int64_t total) {
    if (inner) inner(done, total);
    if (done == total) profiler.set_enabled(true);
  };
}

std::string FormatGenerationProfile(const OpProfiler& profiler, const GenerationStats& stats) {
  const double between = stats.total_seconds - stats.prefill_seconds - stats.decode_seconds;
  return FormatProfile({&profiler, stats.decode_steps, stats.decode_seconds, std::max(0.0, between)});
}

}  // namespace g4::cli
