// The HTTP client against a real server on the loopback interface: pages and event streams
// as they arrive, the API key sent as a bearer token, and each way a server or the network
// can fail, every one a RemoteError that names the URL.
#include <gtest/gtest.h>

#include <atomic>

#include "engine/core/error.h"
#include "engine/remote/http_client.h"
#include "support/loopback_server.h"

namespace inferscope::remote {
namespace {

using testing::LoopbackServer;

void expect_remote_error(const std::function<void()>& call, const std::string& message) {
    try {
        call();
        ADD_FAILURE() << "no error; expected one with: " << message;
    } catch (const RemoteError& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
}

TEST(BaseUrl, HostPortPathAndWhatIsRefused) {
    const ParsedUrl plain = parse_base_url("http://localhost:8000");
    EXPECT_EQ(plain.host, "localhost");
    EXPECT_EQ(plain.port, 8000);
    EXPECT_FALSE(plain.https);
    EXPECT_EQ(plain.path_prefix, "");
    const ParsedUrl prefixed = parse_base_url("https://models.example.org/serving/");
    EXPECT_TRUE(prefixed.https);
    EXPECT_EQ(prefixed.port, 443);
    EXPECT_EQ(prefixed.path_prefix, "/serving");
    const ParsedUrl v6 = parse_base_url("http://[::1]:9000");
    EXPECT_EQ(v6.host, "::1");
    EXPECT_EQ(v6.port, 9000);
    EXPECT_EQ(parse_base_url("http://10.0.0.2").port, 80);
    for (const char* bad : {"localhost:8000", "ftp://host", "http://", "http://:80", "http://h:0", "http://h:99999",
                            "http://h:8x", "http://user:pw@host", "http://[::1"}) {
        EXPECT_THROW(parse_base_url(bad), InvalidArgument) << bad;
    }
}

TEST(HttpClient, GetsAPageAndSendsTheApiKeyAsABearerToken) {
    std::string authorization;  // outlives the server, whose handler writes it
    LoopbackServer loopback;
    loopback.server().Get("/api/metrics", [&](const httplib::Request& req, httplib::Response& res) {
        authorization = req.get_header_value("Authorization");
        res.set_content("x 1\n", "text/plain");
    });
    const std::string url = loopback.start();
    HttpClient client({url + "/api", "secret-key", 5});
    EXPECT_EQ(client.get("/metrics"), "x 1\n");
    EXPECT_EQ(authorization, "Bearer secret-key");
    HttpClient anonymous({url + "/api/", "", 5});
    EXPECT_EQ(anonymous.get("/metrics"), "x 1\n");
    EXPECT_EQ(authorization, "");
}

TEST(HttpClient, HttpErrorsRedirectsOversizedPagesAndTimeouts) {
    LoopbackServer loopback;
    loopback.server().Get("/missing", [](const httplib::Request&, httplib::Response& res) {
        res.status = 404;
        res.set_content("{\"error\": \"no such route\"}", "application/json");
    });
    loopback.server().Get(
        "/moved", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("http://elsewhere.example/metrics"); });
    loopback.server().Get("/huge", [](const httplib::Request&, httplib::Response& res) {
        res.set_content(std::string(100000, 'x'), "text/plain");
    });
    loopback.server().Get("/slow", [](const httplib::Request&, httplib::Response& res) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        res.set_content("late", "text/plain");
    });
    const std::string url = loopback.start();
    HttpClient client({url, "", 0.5, 4096});
    expect_remote_error([&] { client.get("/missing"); }, "GET " + url + "/missing: HTTP 404 {\"error\": \"no such route\"}");
    expect_remote_error([&] { client.get("/moved"); }, "HTTP 302");  // not followed: the key stays with this host
    expect_remote_error([&] { client.get("/huge"); }, "the response is over 4096 bytes");
    expect_remote_error([&] { client.get("/slow"); }, "GET " + url + "/slow: ");
    // The client still works after each failure.
    expect_remote_error([&] { client.get("/missing"); }, "HTTP 404");
}

TEST(HttpClient, NothingListening) {
    const std::string url = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port());
    HttpClient client({url, "", 2});
    expect_remote_error([&] { client.get("/metrics"); }, "GET " + url + "/metrics: Connection");
}

// A completion stream as OpenAI-compatible servers send it, in pieces with pauses between.
void serve_stream(httplib::Server& server, std::vector<std::string> pieces, const char* type = "text/event-stream") {
    server.Post("/v1/completions", [pieces, type](const httplib::Request&, httplib::Response& res) {
        res.set_chunked_content_provider(type, [pieces](size_t, httplib::DataSink& sink) {
            for (const std::string& p : pieces) {
                sink.write(p.data(), p.size());
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            sink.done();
            return true;
        });
    });
}

TEST(HttpClient, EventStreamIsHandedOverEventByEvent) {
    LoopbackServer loopback;
    serve_stream(loopback.server(), {"data: {\"n\":1}\n\n", "data: {\"n\"", ":2}\n\n: ping\n\n", "data: [DONE]\n\n"});
    HttpClient client({loopback.start(), "", 5});
    std::vector<std::string> data;
    client.post_event_stream("/v1/completions", "{\"stream\":true}", [&](const ServerSentEvent& e) {
        data.push_back(e.data);
        return true;
    });
    // One call per event, in order, the event split across two writes joined.
    EXPECT_EQ(data, (std::vector<std::string>{"{\"n\":1}", "{\"n\":2}", "[DONE]"}));
}

TEST(HttpClient, TheCallerCanStopAStream) {
    LoopbackServer loopback;
    serve_stream(loopback.server(), {"data: a\n\n", "data: b\n\n", "data: c\n\n"});
    HttpClient client({loopback.start(), "", 5});
    int seen = 0;
    client.post_event_stream("/v1/completions", "{}", [&](const ServerSentEvent&) { return ++seen < 2; });
    EXPECT_EQ(seen, 2);
}

TEST(HttpClient, StreamsThatAreNotEventStreamsOrEndMidEvent) {
    LoopbackServer loopback;
    loopback.server().Post("/v1/chat/completions", [](const httplib::Request&, httplib::Response& res) {
        res.status = 400;
        res.set_content("{\"error\":{\"message\":\"max_tokens is too large\"}}", "application/json");
    });
    serve_stream(loopback.server(), {"data: {\"n\":1}\n\n", "data: {\"n\":"});
    loopback.server().Post("/v1/plain", [](const httplib::Request&, httplib::Response& res) {
        res.set_content("{\"choices\":[]}", "application/json");
    });
    const std::string url = loopback.start();
    HttpClient client({url, "", 5});
    const auto ignore = [](const ServerSentEvent&) { return true; };
    expect_remote_error([&] { client.post_event_stream("/v1/chat/completions", "{}", ignore); },
                        "POST " + url + "/v1/chat/completions: HTTP 400 {\"error\":{\"message\":\"max_tokens is too large\"}}");
    expect_remote_error([&] { client.post_event_stream("/v1/completions", "{}", ignore); },
                        "the event stream ended in the middle of an event");
    expect_remote_error([&] { client.post_event_stream("/v1/plain", "{}", ignore); },
                        "the response is 'application/json', not an event stream");
}

}  // namespace
}  // namespace inferscope::remote
