#pragma once
// HTTP to one serving engine the user named: GET for pages (/metrics, /v1/models) and POST
// with a server-sent event stream read as it arrives (streaming completions). Requests go to
// that host only (redirects are not followed, so an API key never reaches another host);
// every request has a time limit and every response a size limit, and anything that goes
// wrong is a RemoteError naming the URL and what happened.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "engine/remote/sse.h"

namespace inferscope::remote {

struct RemoteTarget {
    std::string base_url;  // http[s]://host[:port][/path prefix]
    std::string api_key;   // sent as "Authorization: Bearer ..." when not empty
    double timeout_s = 30;  // connecting, and each wait for bytes
    size_t max_response_bytes = 64u << 20;
};

// The parts of a base URL; throws InvalidArgument for anything but
// http[s]://host[:port][/path] (https verifies the server's certificate against the system's).
struct ParsedUrl {
    bool https = false;
    std::string host;
    int port = 80;  // 443 for https when not given
    std::string path_prefix;  // "" or "/prefix" without a trailing slash
};
ParsedUrl parse_base_url(std::string_view url);

class HttpClient {
public:
    explicit HttpClient(RemoteTarget target);
    ~HttpClient();
    HttpClient(const HttpClient&) = delete;
    HttpClient& operator=(const HttpClient&) = delete;

    const RemoteTarget& target() const { return target_; }

    // The body of a 2xx response to GET base + path.
    std::string get(std::string_view path);

    // POSTs a JSON body to base + path and hands each event of the streamed response to
    // `on_event` as it arrives; returning false from it closes the stream. A 2xx response
    // that is not an event stream, or one cut off mid-event, is a RemoteError.
    void post_event_stream(std::string_view path, const std::string& json_body,
                           const std::function<bool(const ServerSentEvent&)>& on_event);

private:
    struct Impl;
    RemoteTarget target_;
    ParsedUrl url_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace inferscope::remote
