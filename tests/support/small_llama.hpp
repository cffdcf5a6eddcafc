#pragma once
// A Llama block shrunk for tests of recomputation policies: hidden 256, 8
// heads of 32, 2 key/value heads, SwiGLU ffn 512, 128-token sequences, a
// 1,024-word vocabulary, FlashAttention, 2 layers; small enough that a test
// computes its GEMMs, FLOPs and stored bytes by hand.
#include "workloads/model_spec.hpp"

namespace trainsim::testing {

inline workloads::ModelSpec small_llama() {
  auto m = *workloads::find_model_preset("llama3-8b");
  m.layers = 2;
  m.hidden = 256;
  m.heads = 8;
  m.kv_heads = 2;
  m.ffn_hidden = 512;
  m.seq_len = 128;
  m.vocab = 1024;
  m.flash_attention = true;
  return m;
}

}  // namespace trainsim::testing
