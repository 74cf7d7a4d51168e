#include "engine/remote/served_model.h"

#include <initializer_list>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace inferscope::remote {
namespace {

nlohmann::json parse_or_null(const std::string& page) {
    try {
        return nlohmann::json::parse(page);
    } catch (const nlohmann::json::exception&) {
        return nullptr;
    }
}

// The positive integer at `path` in j, if j has one there.
std::optional<int64_t> positive_integer_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
    const nlohmann::json* at = &j;
    for (const char* key : path) {
        if (!at->is_object() || !at->contains(key)) return std::nullopt;
        at = &(*at)[key];
    }
    if (!at->is_number_integer()) return std::nullopt;
    const int64_t value = at->get<int64_t>();
    return value > 0 ? std::optional<int64_t>(value) : std::nullopt;
}

nlohmann::json first_model_entry(HttpClient& client) {
    const std::string page = client.get("/v1/models");
    const nlohmann::json models = parse_or_null(page);
    if (models.is_object() && models.contains("data") && models["data"].is_array() && !models["data"].empty()) {
        const nlohmann::json& first = models["data"][0];
        if (first.is_object() && first.contains("id") && first["id"].is_string()) return first;
    }
    throw RemoteError("GET " + client.target().base_url + "/v1/models: no model id in " + page.substr(0, 120));
}

// A page a server may not have: its JSON, or null for an HTTP error or a body that is not JSON.
nlohmann::json optional_page(HttpClient& client, std::string_view path) {
    try {
        return parse_or_null(client.get(path));
    } catch (const RemoteError&) {
        return nullptr;
    }
}

}  // namespace

std::string first_served_model(HttpClient& client) { return first_model_entry(client)["id"].get<std::string>(); }

ServedModel describe_served_model(HttpClient& client) {
    const nlohmann::json entry = first_model_entry(client);
    ServedModel model{entry["id"].get<std::string>(), std::nullopt, ""};
    const auto found = [&](std::optional<int64_t> tokens, const char* source) {
        if (!tokens) return false;
        model.context_tokens = tokens;
        model.context_source = source;
        return true;
    };
    if (found(positive_integer_at(entry, {"max_model_len"}), "/v1/models max_model_len")) return model;
    if (found(positive_integer_at(optional_page(client, "/props"), {"default_generation_settings", "n_ctx"}), "/props n_ctx")) {
        return model;
    }
    found(positive_integer_at(optional_page(client, "/info"), {"max_total_tokens"}), "/info max_total_tokens");
    return model;
}

}  // namespace inferscope::remote
