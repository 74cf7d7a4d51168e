#pragma once
// What a serving engine says about the model it serves: its id and, where the server reports
// it, the context length a request may fill. The engines report it in different places:
// vLLM and SGLang as max_model_len in /v1/models, llama-server as the slots' n_ctx in /props,
// TGI as max_total_tokens in /info.
#include <cstdint>
#include <optional>
#include <string>

#include "engine/remote/http_client.h"

namespace inferscope::remote {

struct ServedModel {
    std::string id;                        // the first model /v1/models lists
    std::optional<int64_t> context_tokens;  // empty: the server reports none
    std::string context_source;            // where context_tokens came from, e.g. "/props n_ctx"
};

// Reads /v1/models, then /props and /info until one reports a context length. Only
// /v1/models failing (an HTTP error, no model id) is an error: the others are optional pages.
ServedModel describe_served_model(HttpClient& client);

// The first id /v1/models lists (no further requests).
std::string first_served_model(HttpClient& client);

}  // namespace inferscope::remote
