#pragma once
// Named intermediate tensors of the forward pass, offered to an observer. The names are
// stable (they are what probes subscribe to):
//   token_embd            [n_tokens x n_embd]  embeddings of the batch's tokens
//   blk.N.attn_in         [n_tokens x n_embd]  RMS-normalised input of attention
//   blk.N.q / .k / .v     [n_tokens x q_dim | kv_dim] projections (q, k after their norms and RoPE)
//   blk.N.attn_ctx        [n_tokens x q_dim]   attention output before the output projection
//   blk.N.attn_out        [n_tokens x n_embd]  after the output projection
//   blk.N.attn_post_norm  [n_tokens x n_embd]  its RMS norm (architectures with post-norms: Gemma)
//   blk.N.ffn_in          [n_tokens x n_embd]  residual stream after attention (FFN input)
//   blk.N.ffn_norm        [n_tokens x n_embd]  RMS-normalised FFN input
//   blk.N.ffn_hidden      [n_tokens x n_ff]    silu(gate) * up (gelu for Gemma), the input of down_proj
//   blk.N.ffn_out         [n_tokens x n_embd]  FFN output
//   blk.N.ffn_post_norm   [n_tokens x n_embd]  its RMS norm (architectures with post-norms)
//   blk.N.resid           [n_tokens x n_embd]  residual stream after the block
//   output_norm           [n_tokens x n_embd]  final RMS-normalised hidden state
#include <cstdint>
#include <span>
#include <string_view>

#include "engine/backend/batch.h"

namespace inferscope {

struct NamedTensor {
    std::string_view name;
    int layer = -1;  // -1 outside the blocks
    const float* data = nullptr;
    int64_t rows = 0;  // one row per batch token
    int64_t cols = 0;
    std::span<const BatchToken> tokens;
};

class ActivationTap {
public:
    virtual ~ActivationTap() = default;
    // Called during the forward pass on the thread running it; the data is only valid
    // during the call.
    virtual void on_tensor(const NamedTensor& tensor) = 0;
};

}  // namespace inferscope
