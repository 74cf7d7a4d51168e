#include "engine/remote/next_token_logprobs.h"

#include "engine/core/error.h"
#include "engine/remote/served_model.h"

namespace inferscope::remote {

NextTokenLogprobs read_next_token_logprobs(HttpClient& client, const std::string& model, const std::string& prompt, int top_k) {
    if (top_k < 1 || top_k > 20) {
        throw InvalidArgument("top-k log-probabilities must be within [1, 20], got " + std::to_string(top_k));
    }
    CompletionRequest request;
    request.model = model.empty() ? first_served_model(client) : model;
    request.prompt = prompt;
    request.max_tokens = 1;
    request.top_logprobs = top_k;
    const StreamTiming timing = stream_completion(client, request);
    if (timing.top_logprobs.empty() || timing.top_logprobs.front().empty()) {
        throw RemoteError(client.target().base_url + " returned no log-probabilities (the server does not support \"logprobs\")");
    }
    NextTokenLogprobs out;
    out.token = timing.text;
    out.top = timing.top_logprobs.front();
    if (out.top.size() > static_cast<size_t>(top_k)) out.top.resize(static_cast<size_t>(top_k));  // vLLM adds the token itself
    return out;
}

}  // namespace inferscope::remote
