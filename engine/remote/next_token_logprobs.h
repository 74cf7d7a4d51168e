#pragma once
// A serving engine's next-token distribution as far as its API shows it: the top-k
// log-probabilities (OpenAI's "logprobs") of the one token it generates after a prompt.
// vLLM, SGLang and llama-server return them; a server that returns none is an error that says so.
#include <string>

#include "engine/remote/stream_bench.h"

namespace inferscope::remote {

struct NextTokenLogprobs {
    std::string token;  // the token generated (greedy)
    TopLogprobs top;    // k pieces and log-probabilities at T = 1, descending
};

// One greedy token of /v1/completions with "logprobs": top_k (1..20), streamed; `model` empty:
// the first /v1/models lists. RemoteError as stream_completion's, or for a reply without
// log-probabilities.
NextTokenLogprobs read_next_token_logprobs(HttpClient& client, const std::string& model, const std::string& prompt, int top_k);

}  // namespace inferscope::remote
