#pragma once
// The OpenAI-compatible request and response bodies `serve` speaks: /v1/completions and
// /v1/chat/completions requests parsed and checked, and the completion objects and streamed
// chunks written as vLLM and llama-server write them.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/runtime/sampler.h"

namespace inferscope::server {

// A request the server refuses: the HTTP status and a message for the client.
class ApiError : public std::runtime_error {
public:
    ApiError(int status, const std::string& message) : std::runtime_error(message), status_(status) {}
    int status() const { return status_; }

private:
    int status_;
};

struct ApiRequest {
    bool chat = false;
    std::string model;                // empty: the served model
    std::string prompt;               // /v1/completions with a text prompt
    std::vector<int32_t> prompt_ids;  // /v1/completions with a token-id prompt
    nlohmann::ordered_json messages;  // /v1/chat/completions
    std::optional<int> max_tokens;    // absent: 16 (completions) or the rest of the context (chat)
    SamplingParams sampling;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
    bool ignore_eos = false;
    // Log-probabilities per generated token: -1 none, else how many top ones besides the
    // token's own (completions' "logprobs"; chat's "top_logprobs" once "logprobs" is true).
    int logprobs = -1;
};

constexpr int kMaxTopLogprobs = 20;  // OpenAI's bound for chat; vLLM's default for both

// Parses a request body; ApiError 400 naming the field that is missing, mistyped or out of range.
ApiRequest parse_api_request(const std::string& body, bool chat);

// {"error": {"message", "type", "code"}} as vLLM answers.
std::string error_body(int status, const std::string& message);

struct CompletionPiece {
    std::string id;       // "cmpl-N" / "chatcmpl-N"
    int64_t created = 0;  // Unix seconds
    std::string model;
    bool chat = false;
    bool logprobs = false;               // the choices carry log-probabilities
    bool reports_cached_tokens = false;  // usage has prompt_tokens_details.cached_tokens (prefix caching on)
};

// One generated token's log-probabilities as the API shows them: pieces, not ids.
struct TokenLogprobText {
    std::string token;  // its piece (bytes; possibly part of a UTF-8 character)
    float logprob = 0;
    std::vector<std::pair<std::string, float>> top;  // descending
    int64_t text_offset = 0;                         // where its piece starts in the completion's bytes
};

struct Usage {
    int prompt_tokens = 0;
    int completion_tokens = 0;
    int cached_prompt_tokens = 0;
};

// One streamed chunk: `text`, the log-probabilities of its tokens and, on the last, the
// finish reason ("length", "stop").
std::string stream_chunk(const CompletionPiece& piece, const std::string& text, const std::string& finish_reason,
                         const std::vector<TokenLogprobText>& logprobs = {});
// The chunk with only the usage block (stream_options.include_usage).
std::string usage_chunk(const CompletionPiece& piece, const Usage& usage);
// The whole (non-streamed) completion object.
std::string completion_body(const CompletionPiece& piece, const std::string& text, const std::string& finish_reason,
                            const Usage& usage, const std::vector<TokenLogprobText>& logprobs = {});

// JSON text that survives any bytes: invalid UTF-8 (a reply cut inside a character) becomes U+FFFD.
std::string dump_json(const nlohmann::ordered_json& value);

}  // namespace inferscope::server
