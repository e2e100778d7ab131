// The seeded value generator behind synthetic checkpoints, shared by the safetensors and GGUF
// writers so both formats hold the same weights for the same seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "loader/safetensors_writer.h"
#include "model/gemma4/tensors.h"

namespace g4::synthetic_internal {

// The per-tensor key: a pure function of the seed and the slot name.
uint64_t TensorKey(uint64_t seed, const std::string& slot_name);

// Element i (row-major over slot.shape) of the tensor with key `key`.
float TensorValue(const TensorSlot& slot, int hidden, uint64_t key, int64_t i);

// `fill` with the running count of the bytes it wrote passed to `on_bytes` after each write
// (SyntheticOptions::on_bytes); `fill` itself when on_bytes is empty.
TensorFill CountBytes(TensorFill fill, std::function<void(uint64_t)> on_bytes);

}  // namespace g4::synthetic_internal
