// How a model is loaded: options a front end passes in (never process globals), shared by every
// architecture.
#pragma once

#include <string>

#include "core/status.h"
#include "ops/matmul_q8a.h"

namespace g4 {

// The LM head used at run time. The tied embedding is bf16 in every released Gemma 4 checkpoint
// (the W4A16 exports leave it unquantized): 262144 x 1536 x 2 B = 0.8 GB read per decoded token
// on E2B, the largest single tensor. A quantized copy made at load cuts that (docs/speed.md has
// the bytes, the speed and the logits error of each choice).
enum class HeadMode {
  kAuto,      // kQ8 when the checkpoint has quantized linears (W4A16), else kAsStored; with
              // int8 activations kQ6_K or kQ8_0 (LoadOptions::int8_matvec); on a device
              // backend always kAsStored (see LoadOptions::device)
  kAsStored,  // the tied embedding itself, no copy ("bf16")
  kQ8,        // int8, one f32 scale per row (0.40 GB on E2B)
  kQ4,        // int4, groups of 32, bf16 scales: the W4A16 scheme (0.23 GB on E2B)
  kQ8_0,      // GGUF Q8_0 blocks (int8, an f16 scale per 32): what kAuto picks with int8
              // activations when the stored head is a block kind the backend does not pack,
              // or a float one that a Q6_K copy would not suit (see kQ6_K)
  kQ6_K,      // GGUF Q6_K blocks (6.56 bits a weight, 0.33 GB on E2B): the head llama.cpp's
              // Q4_0 / Q4_K_M files carry; what kAuto picks with int8 activations for a float
              // head whose hidden size is whole blocks of 256, where the backend packs Q6_K
};
// "auto" | "bf16" | "q8" | "q4" | "q8_0" | "q6_k"; InvalidArgument naming the accepted values
// otherwise.
StatusOr<HeadMode> ParseHeadMode(const std::string& name);
const char* HeadModeName(HeadMode mode);

struct LoadOptions {
  HeadMode head = HeadMode::kAuto;
  // The model will run on a device backend (Backend::memory().is_device()): kAuto keeps the
  // stored head there, because the q8 copy kAuto picks for W4A16 checkpoints is an int8-per-row
  // matmul the device kernels do not define (it would run on the host, every step).
  bool device = false;
  // The backend runs int8 activations (MatVec::kQ8, ops/backend.h): kAuto keeps a stored head
  // of Q8_0 blocks, or of a kind those kernels run with integer dot products (core/q8_blocks.h
  // HasQ8Dot, e.g. Q6_K) when pack_weight packs it (AVX-512 VNNI), which streams faster than
  // the int8-per-row copy through the f32 kernel; otherwise (a kind it does not pack) it makes
  // a Q8_0 copy, which the integer kernel streams at full speed, and of a float head a Q6_K
  // copy where the backend packs Q6_K (HeadMode::kQ6_K; docs/speed.md).
  bool int8_matvec = false;
  int threads = 0;  // for load-time copies; <= 0: all cores
  // The backend's load-time layout for its matmuls (Backend::weight_packer()): every linear
  // and the LM head it returns panels for gets them (QuantInfo::panels), and the mapped pages
  // it packed from are released. Null: weights are used as loaded.
  PackWeightFn pack_weight = nullptr;
};

}  // namespace g4
