#pragma once
// A ragged batch: tokens from any number of sequences, each with its own position. Prefill
// (many positions of one sequence), decode (one position of each of many sequences) and
// mixes of both are the same input to the forward pass.
#include <cstdint>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

struct BatchToken {
    TokenId token = 0;
    SeqId seq = 0;
    int32_t pos = 0;      // position in its sequence; the token's K/V are stored at this slot
    bool output = false;  // compute logits for this token
};

using Batch = std::vector<BatchToken>;

}  // namespace inferscope
