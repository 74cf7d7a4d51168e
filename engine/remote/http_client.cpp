#include "engine/remote/http_client.h"

#include <httplib.h>

#include <charconv>
#include <cmath>

#include "engine/core/error.h"

namespace inferscope::remote {
namespace {

// What the first bytes of an error body say, on one line.
std::string body_excerpt(const std::string& body) {
    std::string out;
    for (const char c : body.substr(0, 200)) out.push_back(c == '\n' || c == '\r' ? ' ' : c);
    return out;
}

}  // namespace

ParsedUrl parse_base_url(std::string_view url) {
    ParsedUrl parsed;
    std::string_view rest;
    if (url.substr(0, 7) == "http://") {
        rest = url.substr(7);
    } else if (url.substr(0, 8) == "https://") {
        rest = url.substr(8);
        parsed.https = true;
        parsed.port = 443;
    } else {
        throw InvalidArgument("'" + std::string(url) + "' is not an http:// or https:// URL");
    }
    const size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        parsed.path_prefix = std::string(rest.substr(slash));
        while (!parsed.path_prefix.empty() && parsed.path_prefix.back() == '/') parsed.path_prefix.pop_back();
    }
    if (authority.find('@') != std::string_view::npos) {
        throw InvalidArgument("'" + std::string(url) + "': put credentials in an API key, not in the URL");
    }
    size_t colon = authority.rfind(':');
    if (!authority.empty() && authority.front() == '[') {  // [IPv6]:port
        const size_t close = authority.find(']');
        if (close == std::string_view::npos) throw InvalidArgument("'" + std::string(url) + "': unterminated IPv6 address");
        parsed.host = std::string(authority.substr(1, close - 1));
        colon = authority.size() > close + 1 && authority[close + 1] == ':' ? close + 1 : std::string_view::npos;
    } else {
        parsed.host = std::string(authority.substr(0, colon));
    }
    if (colon != std::string_view::npos) {
        const std::string_view digits = authority.substr(colon + 1);
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), parsed.port);
        if (ec != std::errc() || end != digits.data() + digits.size() || parsed.port < 1 || parsed.port > 65535) {
            throw InvalidArgument("'" + std::string(url) + "': the port must be a number from 1 to 65535");
        }
    }
    if (parsed.host.empty()) throw InvalidArgument("'" + std::string(url) + "' names no host");
    return parsed;
}

// scheme://host:port, as httplib's universal client takes it (an IPv6 host in brackets).
std::string origin(const ParsedUrl& url) {
    const bool v6 = url.host.find(':') != std::string::npos;
    return std::string(url.https ? "https://" : "http://") + (v6 ? "[" + url.host + "]" : url.host) + ":" +
           std::to_string(url.port);
}

struct HttpClient::Impl {
    Impl(const ParsedUrl& url, const RemoteTarget& target) : client(origin(url)) {
        const double whole = std::floor(target.timeout_s);
        const auto seconds = static_cast<time_t>(whole);
        const auto micros = static_cast<time_t>((target.timeout_s - whole) * 1e6);
        client.set_connection_timeout(seconds, micros);
        client.set_read_timeout(seconds, micros);
        client.set_write_timeout(seconds, micros);
        client.set_follow_location(false);
        client.set_keep_alive(true);
        if (!target.api_key.empty()) client.set_bearer_token_auth(target.api_key);
        if (!client.is_valid()) throw InvalidArgument("cannot reach '" + target.base_url + "' with this build's HTTP client");
    }
    httplib::Client client;
};

HttpClient::HttpClient(RemoteTarget target)
    : target_(std::move(target)), url_(parse_base_url(target_.base_url)), impl_(std::make_unique<Impl>(url_, target_)) {
    if (!(target_.timeout_s > 0)) throw InvalidArgument("the time limit of a remote request must be positive");
}

HttpClient::~HttpClient() = default;

std::string HttpClient::get(std::string_view path) {
    const std::string full = url_.path_prefix + std::string(path);
    const std::string where = "GET " + target_.base_url + std::string(path);
    std::string body;
    bool too_large = false;
    const httplib::Result result = impl_->client.Get(full, [&](const char* data, size_t length) {
        if (body.size() + length > target_.max_response_bytes) {
            too_large = true;
            return false;
        }
        body.append(data, length);
        return true;
    });
    if (too_large) {
        throw RemoteError(where + ": the response is over " + std::to_string(target_.max_response_bytes) + " bytes");
    }
    if (!result) throw RemoteError(where + ": " + httplib::to_string(result.error()));
    if (result->status < 200 || result->status >= 300) {
        throw RemoteError(where + ": HTTP " + std::to_string(result->status) + " " + body_excerpt(body));
    }
    return body;
}

void HttpClient::post_event_stream(std::string_view path, const std::string& json_body,
                                   const std::function<bool(const ServerSentEvent&)>& on_event) {
    const std::string where = "POST " + target_.base_url + std::string(path);
    httplib::Request request;
    request.method = "POST";
    request.path = url_.path_prefix + std::string(path);
    request.body = json_body;
    request.set_header("Content-Type", "application/json");
    request.set_header("Accept", "text/event-stream");
    SseParser events(target_.max_response_bytes);
    std::string error_body;
    bool streaming = false, stopped = false;
    std::string failure;
    request.response_handler = [&](const httplib::Response& response) {
        streaming = response.status >= 200 && response.status < 300;
        return true;
    };
    request.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
        if (!streaming) {  // an error status: keep the start of its body for the message
            if (error_body.size() < 4096) error_body.append(data, std::min<size_t>(length, 4096 - error_body.size()));
            return true;
        }
        try {
            for (const ServerSentEvent& e : events.feed(std::string_view(data, length))) {
                if (!on_event(e)) {
                    stopped = true;
                    return false;
                }
            }
        } catch (const RemoteError& e) {
            failure = e.what();
            return false;
        }
        return true;
    };
    const httplib::Result result = impl_->client.send(request);
    if (!failure.empty()) throw RemoteError(where + ": " + failure);
    if (stopped) return;
    if (!result) throw RemoteError(where + ": " + httplib::to_string(result.error()));
    if (result->status < 200 || result->status >= 300) {
        throw RemoteError(where + ": HTTP " + std::to_string(result->status) + " " + body_excerpt(error_body));
    }
    const std::string type = result->get_header_value("Content-Type");
    if (type.rfind("text/event-stream", 0) != 0) {
        throw RemoteError(where + ": the response is '" + type + "', not an event stream");
    }
    if (events.pending_bytes() != 0) throw RemoteError(where + ": the event stream ended in the middle of an event");
}

}  // namespace inferscope::remote
