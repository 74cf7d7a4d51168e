#include "engine/remote/next_token_logprobs.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace inferscope::remote {
namespace {

using nlohmann::json;

// The first token's entry of a completion chunk's legacy "logprobs" block, if it has one.
bool read_first_token(const json& chunk, NextTokenLogprobs& out) {
    if (!chunk.is_object() || !chunk.contains("choices") || !chunk["choices"].is_array() || chunk["choices"].empty())
        return false;
    const json& choice = chunk["choices"][0];
    if (!choice.is_object() || !choice.contains("logprobs") || !choice["logprobs"].is_object()) return false;
    const json& logprobs = choice["logprobs"];
    const auto tokens = logprobs.find("tokens");
    const auto tops = logprobs.find("top_logprobs");
    if (tokens == logprobs.end() || !tokens->is_array() || tokens->empty() || !(*tokens)[0].is_string()) return false;
    if (tops == logprobs.end() || !tops->is_array() || tops->empty() || !(*tops)[0].is_object()) return false;
    out.token = (*tokens)[0].get<std::string>();
    for (const auto& [piece, logprob] : (*tops)[0].items()) {
        if (!logprob.is_number()) throw RemoteError("a top log-probability is not a number: " + logprob.dump());
        out.top.emplace_back(piece, logprob.get<double>());
    }
    return true;
}

}  // namespace

NextTokenLogprobs read_next_token_logprobs(HttpClient& client, const std::string& model, const std::string& prompt, int top_k) {
    if (top_k < 1 || top_k > 20)
        throw InvalidArgument("top-k log-probabilities must be within [1, 20], got " + std::to_string(top_k));
    json body = {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}, {"logprobs", top_k}, {"stream", true}};
    if (!model.empty()) body["model"] = model;
    NextTokenLogprobs out;
    bool found = false;
    client.post_event_stream("/v1/completions", body.dump(), [&](const ServerSentEvent& event) {
        if (event.data == "[DONE]") return false;
        const json chunk = json::parse(event.data, nullptr, false);
        if (chunk.is_discarded()) throw RemoteError("the stream sent a chunk that is not JSON: " + event.data.substr(0, 200));
        if (!found) found = read_first_token(chunk, out);
        return true;
    });
    if (!found || out.top.empty()) {
        throw RemoteError(client.target().base_url + " returned no log-probabilities (the server does not support \"logprobs\")");
    }
    std::stable_sort(out.top.begin(), out.top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    if (out.top.size() > static_cast<size_t>(top_k)) out.top.resize(static_cast<size_t>(top_k));  // vLLM adds the token itself
    return out;
}

}  // namespace inferscope::remote
