// `serve` over real HTTP on loopback: the remote client (engine/remote) against our own server
// on the built-in stories260K model, streamed and whole, many streams at once, bad requests,
// limits, a client leaving mid-stream, and shutdown with streams in flight.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/eval/soft_labels.h"
#include "engine/remote/http_client.h"
#include "engine/remote/next_token_logprobs.h"
#include "engine/remote/prometheus.h"
#include "engine/remote/served_model.h"
#include "engine/remote/server_metrics.h"
#include "engine/remote/stream_bench.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"
#include "engine/serve/completion_server.h"
#include "engine/serve/openai_protocol.h"
#include "engine/synth/builtin_models.h"
#include "support/lost_gpu_backend.h"
#include "support/running_server.h"

namespace inferscope {
namespace {

using remote::ServerQuantity;

using testing::kContextTokens;
using testing::RunningServer;

remote::CompletionRequest ask(int max_tokens) {
    remote::CompletionRequest r;
    r.prompt = "Once upon a time";
    r.max_tokens = max_tokens;
    r.ignore_eos = true;
    return r;
}

double reading(const remote::ServerMetrics& m, ServerQuantity q) { return m[q].value.value_or(-1); }

// Each token reaches the client before the next step runs: the engine is held after each
// step until the client has the step's token (or 5 s have passed, which fails the count).
TEST(CompletionServer, StreamsEachTokenAsItIsSampled) {
    std::mutex mutex;
    std::condition_variable changed;
    int steps = 0, events = 0;
    bool pacing = true;
    server::ServeOptions options;
    options.after_step = [&](const SchedulerStep&) {
        std::unique_lock lock(mutex);
        if (!pacing) return;
        ++steps;
        changed.wait_for(lock, std::chrono::seconds(5), [&] { return events >= steps; });
    };
    RunningServer server(options);
    remote::HttpClient http(server.target());
    const std::string body =
        R"({"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "ignore_eos": true, "stream": true})";
    std::string streamed_text;
    http.post_event_stream("/v1/completions", body, [&](const remote::ServerSentEvent& e) {
        const auto chunk = nlohmann::json::parse(e.data, nullptr, false);
        if (chunk.is_object() && !chunk["choices"].empty() && !chunk["choices"][0]["text"].get<std::string>().empty()) {
            streamed_text += chunk["choices"][0]["text"].get<std::string>();
            std::lock_guard lock(mutex);
            ++events;
            changed.notify_all();
        }
        return true;
    });
    {
        std::lock_guard lock(mutex);
        pacing = false;
        EXPECT_EQ(events, 24) << "pieces of text the 24 tokens came in";
        EXPECT_LE(steps, 24);  // the last step's callback may come after the stream ended
    }

    auto client = server.client();
    const auto whole = client.Post("/v1/completions",
                                   R"({"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "ignore_eos": true})",
                                   "application/json");
    ASSERT_TRUE(whole);
    ASSERT_EQ(whole->status, 200) << whole->body;
    const auto reply = nlohmann::json::parse(whole->body);
    EXPECT_EQ(reply["choices"][0]["text"], streamed_text);  // greedy both times
    EXPECT_EQ(reply["usage"]["completion_tokens"], 24);
    EXPECT_EQ(reply["model"], "stories260K");
}

// The remote client's timing of a stream: the usage block, the finish reason, every piece timed.
TEST(CompletionServer, TheRemoteClientTimesAStream) {
    RunningServer server;
    remote::HttpClient http(server.target());
    const remote::StreamTiming t = remote::stream_completion(http, ask(24));
    EXPECT_EQ(t.completion_tokens, 24);
    EXPECT_TRUE(t.usage_reported);
    EXPECT_EQ(t.finish_reason, "length");
    EXPECT_FALSE(t.text.empty());
    EXPECT_EQ(t.inter_token_ms().size() + 1, t.arrivals_ms.size());  // a gap between each two pieces
    std::printf("[ INFO     ] 24 tokens streamed in %zu pieces, first after %.2f ms, all after %.2f ms\n", t.arrivals_ms.size(),
                t.ttft_ms, t.total_ms);
}

TEST(CompletionServer, DescribesItsModelAndContext) {
    RunningServer server;
    remote::HttpClient http(server.target());
    const remote::ServedModel served = remote::describe_served_model(http);
    EXPECT_EQ(served.id, "stories260K");
    ASSERT_TRUE(served.context_tokens.has_value());
    EXPECT_EQ(*served.context_tokens, kContextTokens);
    auto client = server.client();
    const auto health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
}

// 64 streams at once through 4 slots: every request completes with all its tokens, and the
// server's counters are what the clients received.
TEST(CompletionServer, SixtyFourStreamsLoseNothingAndTheCountersMatch) {
    RunningServer server;
    const auto levels = remote::sweep_concurrency(server.target(), ask(16), {64}, {}, remote::SweepOptions{20});
    ASSERT_EQ(levels.size(), 1u);
    ASSERT_EQ(levels[0].timings.size(), 64u);
    int received = 0;
    for (const remote::StreamTiming& t : levels[0].timings) {
        EXPECT_EQ(t.completion_tokens, 16);
        EXPECT_EQ(t.finish_reason, "length");
        received += t.completion_tokens;
    }
    const remote::ServerMetrics m = server.metrics();
    EXPECT_EQ(m.engine, "vLLM");
    EXPECT_EQ(reading(m, ServerQuantity::GenerationTokens), received);
    EXPECT_EQ(reading(m, ServerQuantity::RequestsRunning), 0);
    EXPECT_EQ(reading(m, ServerQuantity::RequestsWaiting), 0);
    ASSERT_TRUE(m[ServerQuantity::TimeToFirstToken].histogram.has_value());
    EXPECT_EQ(m[ServerQuantity::TimeToFirstToken].histogram->count, 64);
    ASSERT_TRUE(m[ServerQuantity::EndToEndLatency].histogram.has_value());
    EXPECT_EQ(m[ServerQuantity::EndToEndLatency].histogram->count, 64);
    EXPECT_GT(levels[0].server_pages, 0);
    std::printf("[ INFO     ] 64 streams: %.1f tokens/s together, most running at once per /metrics: %.0f\n",
                levels[0].tokens_per_s, levels[0].server_running_max.value_or(-1));
}

// A second server on a port already served is refused by name instead of sharing the port.
TEST(CompletionServer, ASecondServerOnABoundPortIsRefused) {
    RunningServer first;
    InferenceSession session(load_builtin_model(), testing::test_session_options(KvDtype::F16, kContextTokens, 1));
    server::ServeOptions options;
    options.host = "127.0.0.1";
    options.port = first.port();
    server::CompletionServer second(session, options);
    try {
        second.bind();
        FAIL() << "a second server bound port " << first.port();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(":" + std::to_string(first.port()) + " (in use"), std::string::npos) << e.what();
    }
    remote::HttpClient http(first.target());
    EXPECT_EQ(remote::stream_completion(http, ask(2)).completion_tokens, 2);  // the first still serves
}

TEST(CompletionServer, RefusesBadRequestsWithClearErrors) {
    server::ServeOptions options;
    options.max_body_bytes = 4096;
    RunningServer server(options);
    auto client = server.client();
    const auto expect_error = [&](const char* path, const std::string& body, int status, const std::string& says) {
        const auto r = client.Post(path, body, "application/json");
        ASSERT_TRUE(r) << body;
        EXPECT_EQ(r->status, status) << body << " -> " << r->body;
        if (status == 413) return;  // httplib's own answer
        const auto error = nlohmann::json::parse(r->body);
        EXPECT_NE(error["error"]["message"].get<std::string>().find(says), std::string::npos) << r->body;
    };
    expect_error("/v1/completions", "{not json", 400, "not JSON");
    expect_error("/v1/completions", R"({"max_tokens": 4})", 400, "\"prompt\"");
    expect_error("/v1/completions", R"({"prompt": "Hi", "max_tokens": 100000})", 400, "context");
    expect_error("/v1/completions", R"({"prompt": "Hi", "temperature": "hot"})", 400, "temperature");
    expect_error("/v1/completions", R"({"prompt": [1, 2, 99999999]})", 400, "vocabulary");
    expect_error("/v1/completions", R"({"prompt": "Hi", "model": "gpt-4"})", 404, "gpt-4");
    expect_error("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}]})", 400, "chat template");
    expect_error("/v1/completions", R"({"prompt": ")" + std::string(8000, 'a') + R"("})", 413, "");
    // Still serving after all that.
    remote::HttpClient http(server.target());
    EXPECT_EQ(remote::stream_completion(http, ask(4)).completion_tokens, 4);
}

// With a limit of one request at once, a second one while the first streams gets 503.
TEST(CompletionServer, AnswersBusyBeyondItsConcurrencyLimit) {
    server::ServeOptions options;
    options.max_concurrent_requests = 1;
    RunningServer server(options);
    remote::HttpClient http(server.target());
    int second_status = 0;
    const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": true, "stream": true})";
    http.post_event_stream("/v1/completions", body, [&](const remote::ServerSentEvent&) {
        auto client = server.client();
        const auto r = client.Post("/v1/completions", R"({"prompt": "Hi", "max_tokens": 2})", "application/json");
        second_status = r ? r->status : -1;
        return false;
    });
    EXPECT_EQ(second_status, 503);
}

// A client that leaves mid-stream has its request cancelled (aborted) and its slot freed.
TEST(CompletionServer, AClientLeavingMidStreamIsCancelled) {
    RunningServer server;
    remote::HttpClient http(server.target());
    const std::string body = R"({"prompt": "Once upon a time", "max_tokens": 490, "ignore_eos": true, "stream": true})";
    int events = 0;
    http.post_event_stream("/v1/completions", body, [&](const remote::ServerSentEvent&) { return ++events < 2; });
    EXPECT_EQ(events, 2);
    // The server notices at its next write; wait for it, boundedly.
    std::string page;
    for (int i = 0; i < 200; ++i) {
        page = remote::HttpClient(server.target()).get("/metrics");
        if (page.find("finished_reason=\"abort\"} 1") != std::string::npos) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    EXPECT_NE(page.find("finished_reason=\"abort\"} 1"), std::string::npos) << page;
    EXPECT_EQ(reading(server.metrics(), ServerQuantity::RequestsRunning), 0);
    EXPECT_EQ(remote::stream_completion(http, ask(3)).completion_tokens, 3);
}

// stop() with streams in flight ends them and run() returns (the fixture joins it).
TEST(CompletionServer, StopsWithStreamsInFlight) {
    auto server = std::make_unique<RunningServer>();
    std::atomic<int> ended{0};
    std::vector<std::thread> clients;
    std::atomic<int> started{0};
    for (int i = 0; i < 3; ++i) {
        clients.emplace_back([&] {
            remote::HttpClient http(server->target());
            bool first = true;
            try {
                http.post_event_stream("/v1/completions",
                                       R"({"prompt": "Once", "max_tokens": 490, "ignore_eos": true, "stream": true})",
                                       [&](const remote::ServerSentEvent&) {
                                           if (std::exchange(first, false)) ++started;
                                           return true;
                                       });
            } catch (const std::exception&) {
                // a stream cut by the shutdown is an error to the client; either end is fine
            }
            ++ended;
        });
    }
    for (int i = 0; i < 400 && started.load() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    server.reset();  // stop() and join
    for (std::thread& t : clients) t.join();
    EXPECT_EQ(ended.load(), 3);
}

// A device lost under the server stops it: the request in flight ends with the device's error,
// and run() throws it, so that `serve` exits with it instead of answering every later request
// with the same failure.
TEST(CompletionServer, ALostDeviceStopsTheServerWithItsError) {
    RunningServer server(
        {}, 4, [](std::shared_ptr<const Model> model) { return std::make_unique<testing::GpuLostAtPass>(std::move(model), 3); });
    auto client = server.client();
    const auto reply = client.Post("/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 8, "ignore_eos": true})",
                                   "application/json");
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 500) << reply->body;
    EXPECT_NE(reply->body.find("device lost"), std::string::npos) << reply->body;
    const std::string failure = server.wait_stopped();
    EXPECT_NE(failure.find("device lost"), std::string::npos) << "run() ended with: '" << failure << "'";
}

nlohmann::json post_json(const RunningServer& server, const char* path, const std::string& body,
                         const httplib::Headers& headers = {}) {
    auto client = server.client();
    const auto r = client.Post(path, headers, body, "application/json");
    EXPECT_TRUE(r) << body;
    if (!r) return {};
    EXPECT_EQ(r->status, 200) << body << " -> " << r->body;
    return nlohmann::json::parse(r->body);
}

// The API's log-probabilities are the model's: the served next-token top k equals the local
// engine's log-softmax of the same prompt, and each generated token's entry is consistent
// (its own log-probability among the top ones, offsets adding up, streamed as whole).
TEST(CompletionServer, LogprobsAreTheModelsLogSoftmax) {
    RunningServer server;
    remote::HttpClient http(server.target());
    const remote::NextTokenLogprobs served = remote::read_next_token_logprobs(http, "", "Once upon a time", 5);
    ASSERT_EQ(served.top.size(), 5u);

    SessionOptions so = testing::test_session_options(KvDtype::F16, kContextTokens, 1);
    InferenceSession local(load_builtin_model(), so);
    const Tokenizer& tokenizer = local.model().tokenizer();
    const std::vector<TokenId> prompt = tokenizer.encode("Once upon a time", true, true);
    const std::vector<float> logits = next_token_logits(local, prompt);
    const TokenLogprobs expected = token_logprobs(logits, argmax(logits), 5);
    EXPECT_EQ(served.token, tokenizer.token_to_piece(argmax(logits)));
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(served.top[i].first, tokenizer.token_to_piece(expected.top[i].first)) << "rank " << i + 1;
        EXPECT_NEAR(served.top[i].second, expected.top[i].second, 1e-3) << "rank " << i + 1;
    }

    const std::string ask_logprobs =
        R"({"prompt": "Once upon a time", "max_tokens": 12, "temperature": 0, "ignore_eos": true, "logprobs": 3)";
    const nlohmann::json whole = post_json(server, "/v1/completions", ask_logprobs + "}");
    const nlohmann::json& lp = whole["choices"][0]["logprobs"];
    ASSERT_EQ(lp["tokens"].size(), 12u) << whole.dump();
    int64_t offset = 0;
    for (size_t i = 0; i < 12; ++i) {
        const std::string token = lp["tokens"][i].get<std::string>();
        EXPECT_EQ(lp["text_offset"][i].get<int64_t>(), offset);
        offset += static_cast<int64_t>(token.size());
        const float logprob = lp["token_logprobs"][i].get<float>();
        EXPECT_LE(logprob, 0.0f);
        const nlohmann::json& top = lp["top_logprobs"][i];
        EXPECT_GE(top.size(), 1u);
        EXPECT_LE(top.size(), 4u);  // three and the token itself
        ASSERT_TRUE(top.contains(token)) << top.dump();
        float best = -1e30f;
        for (const auto& [piece, value] : top.items()) best = std::max(best, value.get<float>());
        EXPECT_EQ(logprob, best) << "greedy takes the most probable token";
    }

    std::vector<std::string> streamed;
    http.post_event_stream("/v1/completions", ask_logprobs + R"(, "stream": true})", [&](const remote::ServerSentEvent& e) {
        const auto chunk = nlohmann::json::parse(e.data, nullptr, false);
        if (!chunk.is_object() || chunk["choices"].empty()) return true;
        for (const auto& token : chunk["choices"][0]["logprobs"]["tokens"]) streamed.push_back(token.get<std::string>());
        return true;
    });
    EXPECT_EQ(nlohmann::json(streamed), lp["tokens"]);

    const SoftLabels labels = soft_labels_from_top_logprobs(served.top, 2.0);
    ASSERT_TRUE(labels.known_mass.has_value());
    EXPECT_GT(*labels.known_mass, 0.0);
    EXPECT_LE(*labels.known_mass, 1.0 + 1e-9);
    EXPECT_NEAR(labels.top_to_kth_ratio, std::exp((served.top[0].second - served.top[4].second) / 2.0), 1e-9);
}

TEST(CompletionServer, RefusesLogprobRequestsOutOfRange) {
    RunningServer server;
    auto client = server.client();
    for (const char* body : {R"({"prompt": "Hi", "logprobs": 21})", R"({"prompt": "Hi", "logprobs": -1})"}) {
        const auto r = client.Post("/v1/completions", body, "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 400) << body;
        EXPECT_NE(r->body.find("logprobs"), std::string::npos) << r->body;
    }
    const auto chat = client.Post("/v1/chat/completions",
                                  R"({"messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 2})", "application/json");
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->status, 400);
    EXPECT_NE(nlohmann::json::parse(chat->body)["error"]["message"].get<std::string>().find("\"logprobs\": true"),
              std::string::npos)
        << chat->body;
}

// A prompt sharing whole blocks with an earlier one starts from their cached K/V: the usage
// block and /metrics say how many tokens, and greedy text is the same as without the cache.
TEST(CompletionServer, PrefixCachingReusesAnEarlierPromptsBlocks) {
    server::ServeOptions options;
    options.scheduler.prefix_caching = true;
    RunningServer server(options);
    const std::string story =
        "Once upon a time there was a little girl named Lily. She loved to play outside in the park "
        "with her friends. One day she saw a big red ball";
    const std::string body = R"({"prompt": ")" + story + R"(", "max_tokens": 8, "temperature": 0, "ignore_eos": true})";
    const nlohmann::json first = post_json(server, "/v1/completions", body);
    const nlohmann::json second = post_json(server, "/v1/completions", body);
    const int prompt_tokens = first["usage"]["prompt_tokens"].get<int>();
    ASSERT_GT(prompt_tokens, 32) << "the prompt must fill at least two blocks of 16 tokens";
    EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    const int cached = second["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
    EXPECT_EQ(cached, (prompt_tokens - 1) / 16 * 16);
    EXPECT_EQ(second["choices"][0]["text"], first["choices"][0]["text"]);
    const remote::ServerMetrics m = server.metrics();
    EXPECT_EQ(reading(m, ServerQuantity::PrefixCacheQueries), 2 * prompt_tokens);
    EXPECT_EQ(reading(m, ServerQuantity::PrefixCacheHits), cached);
}

// With a key, /v1/ wants it as a bearer token (401 without or with another); /health and
// /metrics stay open; the remote client sends it.
TEST(CompletionServer, AnApiKeyGuardsTheApi) {
    server::ServeOptions options;
    options.api_key = "s3cret-key";
    RunningServer server(options);
    auto client = server.client();
    const std::string body = R"({"prompt": "Hi", "max_tokens": 2})";
    for (const std::string& header : {std::string(), std::string("Bearer wrong-key!"), std::string("s3cret-key")}) {
        httplib::Headers headers;
        if (!header.empty()) headers.emplace("Authorization", header);
        const auto r = client.Post("/v1/completions", headers, body, "application/json");
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 401) << "Authorization: " << header;
        EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["type"], "AuthenticationError");
    }
    const auto models = client.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 401);
    EXPECT_EQ(client.Get("/health")->status, 200);
    EXPECT_EQ(client.Get("/metrics")->status, 200);
    EXPECT_EQ(post_json(server, "/v1/completions", body, {{"Authorization", "Bearer s3cret-key"}})["usage"]["completion_tokens"],
              2);
    remote::RemoteTarget target = server.target();
    target.api_key = "s3cret-key";
    remote::HttpClient http(target);
    EXPECT_EQ(remote::stream_completion(http, ask(3)).completion_tokens, 3);
}

// Chat's shape of log-probabilities (the built-in model has no chat template to serve it):
// "logprobs": true with "top_logprobs" parsed, and content entries with bytes.
TEST(OpenAiProtocol, ChatLogprobsCarryTokensBytesAndTopOnes) {
    const server::ApiRequest request = server::parse_api_request(
        R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true, "top_logprobs": 2})", true);
    EXPECT_EQ(request.logprobs, 2);
    EXPECT_EQ(server::parse_api_request(R"({"messages": [{"role": "user", "content": "Hi"}], "logprobs": true})", true).logprobs,
              0);
    EXPECT_EQ(server::parse_api_request(R"({"messages": [{"role": "user", "content": "Hi"}]})", true).logprobs, -1);
    server::CompletionPiece piece{"chatcmpl-1", 0, "m", true, true, true};
    const std::vector<server::TokenLogprobText> tokens = {{"\xC3", -0.5f, {{"\xC3", -0.5f}, {"a", -1.5f}}, 0},
                                                          {"\xA9", -0.25f, {{"\xA9", -0.25f}, {"b", -2.0f}}, 1}};
    const auto body = nlohmann::json::parse(server::completion_body(piece, "\xC3\xA9", "length", {7, 2, 4}, tokens));
    const nlohmann::json& content = body["choices"][0]["logprobs"]["content"];
    ASSERT_EQ(content.size(), 2u);
    EXPECT_EQ(content[0]["bytes"], nlohmann::json({0xC3}));  // half a character: the bytes say what it is
    EXPECT_EQ(content[1]["logprob"], -0.25);
    ASSERT_EQ(content[1]["top_logprobs"].size(), 2u);
    EXPECT_EQ(content[1]["top_logprobs"][1]["token"], "b");
    EXPECT_EQ(body["choices"][0]["message"]["content"], "\xC3\xA9");
    EXPECT_EQ(body["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

}  // namespace
}  // namespace inferscope
