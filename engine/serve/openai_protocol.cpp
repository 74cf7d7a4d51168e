#include "engine/serve/openai_protocol.h"

#include <limits>

namespace inferscope::server {
namespace {

// Ordered: replies keep their fields in the order written (OpenAI's order; top log-probabilities descending).
using json = nlohmann::ordered_json;

// The field's value when present and not null, checked against the JSON type it must have.
const json* field(const json& body, const char* name, json::value_t type) {
    const auto found = body.find(name);
    if (found == body.end() || found->is_null()) return nullptr;
    const bool number_ok = (type == json::value_t::number_float && found->is_number()) ||
                           (type == json::value_t::number_integer && found->is_number_integer());
    if (found->type() != type && !number_ok) throw ApiError(400, std::string("\"") + name + "\" has the wrong type");
    return &*found;
}

float number_in(const json& body, const char* name, float fallback, float low, float high) {
    const json* value = field(body, name, json::value_t::number_float);
    if (value == nullptr) return fallback;
    const double v = value->get<double>();
    if (!(v >= low && v <= high)) {
        throw ApiError(
            400, std::string("\"") + name + "\" must be within [" + std::to_string(low) + ", " + std::to_string(high) + "]");
    }
    return static_cast<float>(v);
}

// OpenAI's defaults: temperature 1, nucleus and top-k off; `seed` makes a request repeatable.
SamplingParams sampling_of(const json& body) {
    SamplingParams s;
    s.temperature = number_in(body, "temperature", 1.0f, 0.0f, 2.0f);
    s.top_p = number_in(body, "top_p", 1.0f, 0.0f, 1.0f);
    s.min_p = number_in(body, "min_p", 0.0f, 0.0f, 1.0f);
    s.repeat_penalty = number_in(body, "repetition_penalty", 1.0f, 0.0f, 10.0f);
    s.top_k = 0;
    if (const json* k = field(body, "top_k", json::value_t::number_integer)) s.top_k = std::max(0, k->get<int>());
    if (const json* seed = field(body, "seed", json::value_t::number_integer)) s.seed = seed->get<uint64_t>();
    return s;
}

void read_prompt(const json& body, ApiRequest& r) {
    const auto prompt = body.find("prompt");
    if (prompt == body.end() || prompt->is_null()) throw ApiError(400, "\"prompt\" is required");
    if (prompt->is_string()) {
        r.prompt = prompt->get<std::string>();
        if (r.prompt.empty()) throw ApiError(400, "\"prompt\" is empty");
        return;
    }
    if (!prompt->is_array() || prompt->empty())
        throw ApiError(400, "\"prompt\" must be a string or a non-empty array of token ids");
    for (const json& id : *prompt) {
        if (!id.is_number_integer()) throw ApiError(400, "\"prompt\" as an array takes token ids only (one prompt per request)");
        r.prompt_ids.push_back(id.get<int32_t>());
    }
}

void read_messages(const json& body, ApiRequest& r) {
    const auto messages = body.find("messages");
    if (messages == body.end() || !messages->is_array() || messages->empty()) {
        throw ApiError(400, "\"messages\" must be a non-empty array");
    }
    for (const json& m : *messages) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
            !m["content"].is_string()) {
            throw ApiError(400, "each message needs a \"role\" and a text \"content\"");
        }
    }
    r.messages = *messages;
}

int top_logprobs_count(const json& value, const char* name) {
    const int64_t k = value.get<int64_t>();
    if (k < 0 || k > kMaxTopLogprobs) {
        throw ApiError(400, std::string("\"") + name + "\" must be within [0, " + std::to_string(kMaxTopLogprobs) + "]");
    }
    return static_cast<int>(k);
}

// Completions: "logprobs": k. Chat: "logprobs": true, with "top_logprobs": k.
void read_logprobs(const json& body, ApiRequest& r) {
    if (!r.chat) {
        if (const json* k = field(body, "logprobs", json::value_t::number_integer))
            r.logprobs = top_logprobs_count(*k, "logprobs");
        return;
    }
    const json* wanted = field(body, "logprobs", json::value_t::boolean);
    const json* k = field(body, "top_logprobs", json::value_t::number_integer);
    if (k != nullptr && (wanted == nullptr || !wanted->get<bool>())) {
        throw ApiError(400, "\"top_logprobs\" needs \"logprobs\": true");
    }
    if (wanted != nullptr && wanted->get<bool>()) r.logprobs = k != nullptr ? top_logprobs_count(*k, "top_logprobs") : 0;
}

}  // namespace

ApiRequest parse_api_request(const std::string& body_text, bool chat) {
    json body;
    try {
        body = json::parse(body_text);
    } catch (const json::exception& e) {
        throw ApiError(400, std::string("the body is not JSON: ") + e.what());
    }
    if (!body.is_object()) throw ApiError(400, "the body must be a JSON object");
    ApiRequest r;
    r.chat = chat;
    if (const json* model = field(body, "model", json::value_t::string)) r.model = model->get<std::string>();
    chat ? read_messages(body, r) : read_prompt(body, r);
    const char* max_name = body.contains("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
    if (const json* max = field(body, max_name, json::value_t::number_integer)) {
        const int64_t value = max->get<int64_t>();
        if (value < 1 || value > std::numeric_limits<int>::max())
            throw ApiError(400, std::string("\"") + max_name + "\" must be at least 1");
        r.max_tokens = static_cast<int>(value);
    }
    if (const json* n = field(body, "n", json::value_t::number_integer); n != nullptr && n->get<int64_t>() != 1) {
        throw ApiError(400, "\"n\" other than 1 is not supported");
    }
    r.sampling = sampling_of(body);
    if (const json* stream = field(body, "stream", json::value_t::boolean)) r.stream = stream->get<bool>();
    if (const json* options = field(body, "stream_options", json::value_t::object)) {
        r.include_usage = options->value("include_usage", false);
    }
    if (const json* ignore = field(body, "ignore_eos", json::value_t::boolean)) r.ignore_eos = ignore->get<bool>();
    read_logprobs(body, r);
    return r;
}

std::string dump_json(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string error_body(int status, const std::string& message) {
    const char* type = status == 401   ? "AuthenticationError"
                       : status == 404 ? "NotFoundError"
                       : status == 413 ? "RequestTooLarge"
                       : status == 503 ? "ServiceUnavailable"
                       : status >= 500 ? "InternalServerError"
                                       : "BadRequestError";
    return dump_json({{"error", {{"message", message}, {"type", type}, {"code", status}}}});
}

namespace {

json envelope(const CompletionPiece& p, bool streamed) {
    const char* object = p.chat ? (streamed ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return {{"id", p.id}, {"object", object}, {"created", p.created}, {"model", p.model}};
}

json byte_values(const std::string& text) {
    json bytes = json::array();
    for (const char c : text) bytes.push_back(static_cast<unsigned char>(c));
    return bytes;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}]}.
json chat_logprobs(const std::vector<TokenLogprobText>& tokens) {
    json content = json::array();
    for (const TokenLogprobText& t : tokens) {
        json top = json::array();
        for (const auto& [piece, logprob] : t.top)
            top.push_back({{"token", piece}, {"logprob", logprob}, {"bytes", byte_values(piece)}});
        content.push_back({{"token", t.token}, {"logprob", t.logprob}, {"bytes", byte_values(t.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
}

// Completions (the legacy shape): parallel lists, each token's top ones as {piece: logprob}
// with the token itself among them (as vLLM does).
json completion_logprobs(const std::vector<TokenLogprobText>& tokens) {
    json pieces = json::array(), logprobs = json::array(), tops = json::array(), offsets = json::array();
    for (const TokenLogprobText& t : tokens) {
        pieces.push_back(t.token);
        logprobs.push_back(t.logprob);
        json top = json::object();
        for (const auto& [piece, logprob] : t.top) top[piece] = logprob;
        if (!top.contains(t.token)) top[t.token] = t.logprob;
        tops.push_back(top);
        offsets.push_back(t.text_offset);
    }
    return {{"tokens", pieces}, {"token_logprobs", logprobs}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json choice(const CompletionPiece& p, const std::string& text, const std::string& finish_reason, bool streamed,
            const std::vector<TokenLogprobText>& logprobs) {
    json c = {{"index", 0}};
    if (!p.chat) {
        c["text"] = text;
    } else if (streamed) {
        c["delta"] = text.empty() ? json::object() : json{{"content", text}};
    } else {
        c["message"] = {{"role", "assistant"}, {"content", text}};
    }
    if (p.logprobs) c["logprobs"] = p.chat ? chat_logprobs(logprobs) : completion_logprobs(logprobs);
    c["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
    return c;
}

json usage_block(const CompletionPiece& p, const Usage& u) {
    json block = {{"prompt_tokens", u.prompt_tokens},
                  {"completion_tokens", u.completion_tokens},
                  {"total_tokens", u.prompt_tokens + u.completion_tokens}};
    if (p.reports_cached_tokens) block["prompt_tokens_details"] = {{"cached_tokens", u.cached_prompt_tokens}};
    return block;
}

}  // namespace

std::string stream_chunk(const CompletionPiece& piece, const std::string& text, const std::string& finish_reason,
                         const std::vector<TokenLogprobText>& logprobs) {
    json chunk = envelope(piece, true);
    chunk["choices"] = json::array({choice(piece, text, finish_reason, true, logprobs)});
    return dump_json(chunk);
}

std::string usage_chunk(const CompletionPiece& piece, const Usage& usage) {
    json chunk = envelope(piece, true);
    chunk["choices"] = json::array();
    chunk["usage"] = usage_block(piece, usage);
    return dump_json(chunk);
}

std::string completion_body(const CompletionPiece& piece, const std::string& text, const std::string& finish_reason,
                            const Usage& usage, const std::vector<TokenLogprobText>& logprobs) {
    json body = envelope(piece, false);
    body["choices"] = json::array({choice(piece, text, finish_reason, false, logprobs)});
    body["usage"] = usage_block(piece, usage);
    return dump_json(body);
}

}  // namespace inferscope::server
