#pragma once
// A serving engine's next-token distribution as far as its API shows it: the top-k
// log-probabilities (OpenAI's "logprobs") of the one token it generates after a prompt.
// vLLM, SGLang and llama-server return them; a server that returns none is an error that says so.
#include <string>
#include <utility>
#include <vector>

#include "engine/remote/http_client.h"

namespace inferscope::remote {

struct NextTokenLogprobs {
    std::string token;                                // the token generated (greedy)
    std::vector<std::pair<std::string, double>> top;  // pieces and log-probabilities at T = 1, descending
};

// Streams one greedy token of /v1/completions with "logprobs": top_k (1..20). RemoteError for
// an HTTP error, a broken stream, or a reply without log-probabilities.
NextTokenLogprobs read_next_token_logprobs(HttpClient& client, const std::string& model, const std::string& prompt, int top_k);

}  // namespace inferscope::remote
