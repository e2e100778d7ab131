#include "model/decoder/decoder_model.h"

#include <algorithm>

namespace g4 {

Status DecoderModel::Bind(std::shared_ptr<const Checkpoint> checkpoint, ModelConfig config,
                          std::string architecture, SlotList list, const LoadOptions& options) {
  checkpoint_ = std::move(checkpoint);
  config_ = std::move(config);
  slots_ = list(config_, &weights_);
  G4_RETURN_IF_ERROR(BindCheckpoint(*checkpoint_, slots_, options, &weights_));
  rope_inv_freq_.clear();
  rope_at_.clear();
  for (const LayerConfig& l : config_.layers) {
    const std::vector<float> f = config_.InvFreq(l);
    rope_at_.push_back(rope_inv_freq_.size());
    rope_inv_freq_.insert(rope_inv_freq_.end(), f.begin(), f.end());
  }
  const ModelConfig& c = config_;
  info_.architecture = std::move(architecture);
  info_.vocab_size = c.vocab_size;
  info_.input_vocab = c.ple_width > 0 ? std::min(c.vocab_size, c.ple_vocab) : c.vocab_size;
  info_.hidden_size = c.hidden_size;
  info_.max_context = c.max_position_embeddings;
  info_.bos_id = c.bos_id;
  info_.pad_id = c.pad_id;
  info_.eos_ids = c.eos_ids;
  info_.layers = KvLayouts(c);
  return Status::Ok();
}

StatusOr<std::vector<std::vector<float>>> DecoderModel::DoForwardBatch(
    Backend& be, std::span<const BatchItem> items, ForwardTrace* trace,
    StepGraphs* graphs) const {
  const int64_t V = info_.vocab_size;
  const size_t B = items.size();
  if (B == 0) return InvalidArgument("empty batch");
  if (trace && B != 1) return InvalidArgument("a forward trace records a single sequence");
  // Every activation lives in the backend's memory (a GPU's for kCuda): the host sends the ids,
  // positions and RoPE frequencies in and takes the logits out, nothing else.
  Memory& mem = be.memory();

  // Rows of every item stacked: ids and absolute positions [R]; row_begin[b] = first row of b.
  std::vector<int32_t> ids, pos;
  std::vector<int64_t> row_begin(B + 1, 0);
  bool decode = !trace;  // one token per item, each with its cache, last logits only
  for (size_t b = 0; b < B; ++b) {
    const BatchItem& it = items[b];
    const int64_t T = static_cast<int64_t>(it.ids.size());
    if (T == 0) return InvalidArgument("empty input: at least one token id is needed");
    if (it.start_pos < 0 || (!it.cache && (it.start_pos > 0 || B > 1))) {
      return InvalidArgument("a batched or continued sequence needs its KV cache");
    }
    if (it.cache && &it.cache->memory() != &mem) {
      return InvalidArgument(std::string("the KV cache is in ") + it.cache->memory().name() +
                             " memory but the backend computes in " + mem.name() +
                             " memory (create the cache with Backend::memory())");
    }
    if (it.cache && !be.AttendsKvDtype(it.cache->kv_dtype())) {
      return InvalidArgument(std::string("the KV cache stores ") +
                             KvDtypeName(it.cache->kv_dtype()) + " K/V, which the " +
                             BackendName(be.kind()) + " backend's attention cannot read "
                             "(create the cache with Backend::kv_dtype())");
    }
    if (it.start_pos + T > info_.max_context) {
      return InvalidArgument("sequence of " + std::to_string(it.start_pos + T) +
                             " tokens is longer than the context (max_position_embeddings = " +
                             std::to_string(info_.max_context) + ")");
    }
    for (int64_t t = 0; t < T; ++t) {
      const int32_t id = it.ids[static_cast<size_t>(t)];
      if (id < 0 || id >= info_.input_vocab) {
        return InvalidArgument("token id " + std::to_string(id) + " at position " +
                               std::to_string(t) + " is outside the vocabulary of " +
                               std::to_string(info_.input_vocab));
      }
      ids.push_back(id);
      pos.push_back(it.start_pos + static_cast<int32_t>(t));
    }
    row_begin[b + 1] = row_begin[b] + T;
    decode = decode && T == 1 && it.cache && it.last_logits_only;
  }
  int64_t N = 0;  // rows that get logits
  for (size_t b = 0; b < B; ++b) {
    N += items[b].last_logits_only ? 1 : row_begin[b + 1] - row_begin[b];
  }
  // The host's part of the KV writes, before any op: checks, growth, bookkeeping.
  for (size_t b = 0; b < B; ++b) {
    if (!items[b].cache) continue;
    G4_RETURN_IF_ERROR(items[b].cache->Reserve(pos.data() + row_begin[b],
                                               row_begin[b + 1] - row_begin[b]));
  }

  // A decode step with graphs: the buffers of this batch size, and its recording once there
  // is one.
  StepGraphs::Entry* entry = nullptr;
  bool fresh = true;
  std::vector<uint64_t> storage;  // what a recording of this step points to
  // (Not under a profiler: it times ops one by one.)
  if (graphs && decode && be.can_capture() && !be.profiler() && graphs->refused_.empty()) {
    entry = &graphs->Get(static_cast<int64_t>(B), mem, &fresh);
    for (const BatchItem& it : items) storage.push_back(it.cache->storage_id());
  }
  ForwardWorkspace local(mem);
  ForwardWorkspace& ws = entry ? *entry->ws : local;
  G4_RETURN_IF_ERROR(ws.ids.Assign(ids));
  G4_RETURN_IF_ERROR(ws.pos.Assign(pos));
  if (!ws.inv_freq_loaded) {
    G4_RETURN_IF_ERROR(ws.inv_freq.Assign(rope_inv_freq_));
    ws.inv_freq_loaded = true;
  }

  if (entry && entry->graph && entry->storage == storage) {
    G4_RETURN_IF_ERROR(entry->graph->Launch());
    ++graphs->stats_.replayed;
  } else if (entry && !fresh) {
    // A step of this size ran before: every buffer has its size and every weight is on the
    // device, so the pass allocates and uploads nothing and can be recorded (again, over
    // caches other than the last recording's).
    entry->graph.reset();
    entry->storage.clear();
    G4_RETURN_IF_ERROR(be.BeginCapture());
    const Status ran = RunOps(be, ws, items, row_begin, N, nullptr);
    StatusOr<std::unique_ptr<OpGraph>> graph = be.EndCapture();
    G4_RETURN_IF_ERROR(ran);
    if (graph.ok()) {
      entry->graph = std::move(*graph);
      entry->storage = std::move(storage);
      graphs->stats_.ops_per_step = entry->graph->num_ops();
      ++graphs->stats_.recorded;
      G4_RETURN_IF_ERROR(entry->graph->Launch());
    } else {  // nothing ran: run it op by op, and never try again
      graphs->refused_ = graph.status().message();
      ++graphs->stats_.op_by_op;
      G4_RETURN_IF_ERROR(RunOps(be, ws, items, row_begin, N, nullptr));
    }
  } else {
    if (graphs && decode) ++graphs->stats_.op_by_op;
    G4_RETURN_IF_ERROR(RunOps(be, ws, items, row_begin, N, trace));
  }

  // The one copy out; on a device it also reports any failure of the step's kernels.
  std::vector<float> host_logits(static_cast<size_t>(N * V));
  G4_RETURN_IF_ERROR(mem.Download(host_logits.data(), ws.logits.data(),
                                  host_logits.size() * sizeof(float)));
  std::vector<std::vector<float>> out(B);
  int64_t next = 0;
  for (size_t b = 0; b < B; ++b) {
    const int64_t n = items[b].last_logits_only ? 1 : row_begin[b + 1] - row_begin[b];
    out[b].assign(host_logits.begin() + next * V, host_logits.begin() + (next + n) * V);
    next += n;
  }
  return out;
}

}  // namespace g4
