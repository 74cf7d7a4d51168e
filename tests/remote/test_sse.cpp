// The event-stream parser on streams as OpenAI-compatible servers send them, split at every
// byte, with each kind of line end, and on streams that break the rules.
#include "engine/remote/sse.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"

namespace inferscope::remote {
namespace {

const std::string kStream =
    ": keep-alive\n"
    "data: {\"choices\":[{\"text\":\"Hello\"}]}\n"
    "\n"
    "event: usage\n"
    "id: 7\n"
    "data: first line\n"
    "data:second line\n"
    "\n"
    "data\n"
    "\n"
    "retry: 1000\n"
    "\n"
    "data: [DONE]\n"
    "\n";

void expect_stream_events(const std::vector<ServerSentEvent>& events) {
    ASSERT_EQ(events.size(), 4u);
    EXPECT_EQ(events[0].data, "{\"choices\":[{\"text\":\"Hello\"}]}");
    EXPECT_EQ(events[0].event, "");
    EXPECT_EQ(events[1].event, "usage");
    EXPECT_EQ(events[1].id, "7");
    EXPECT_EQ(events[1].data, "first line\nsecond line");
    EXPECT_EQ(events[2].data, "");  // a "data" field without a colon: an empty data line
    EXPECT_EQ(events[2].event, "");  // the event type does not carry over
    EXPECT_EQ(events[3].data, "[DONE]");
    EXPECT_EQ(events[3].id, "7");  // the last event id does
}

TEST(Sse, OneChunk) {
    SseParser parser;
    expect_stream_events(parser.feed(kStream));
    EXPECT_EQ(parser.pending_bytes(), 0u);
}

TEST(Sse, EveryByteSeparately) {
    SseParser parser;
    std::vector<ServerSentEvent> events;
    for (char c : kStream) {
        for (ServerSentEvent& e : parser.feed(std::string_view(&c, 1))) events.push_back(std::move(e));
    }
    expect_stream_events(events);
}

TEST(Sse, CrlfAndCrLineEndsEvenWhenACrlfIsSplit) {
    for (const std::string& end : {std::string("\r\n"), std::string("\r")}) {
        std::string stream;
        for (char c : kStream) stream += c == '\n' ? end : std::string(1, c);
        for (size_t cut = 0; cut <= stream.size(); ++cut) {
            SseParser parser;
            std::vector<ServerSentEvent> events = parser.feed(std::string_view(stream).substr(0, cut));
            for (ServerSentEvent& e : parser.feed(std::string_view(stream).substr(cut))) events.push_back(std::move(e));
            expect_stream_events(events);
            if (::testing::Test::HasFailure()) FAIL() << "cut at " << cut;
        }
    }
}

TEST(Sse, AnEventNotEndedIsHeldAndCounted) {
    SseParser parser;
    EXPECT_TRUE(parser.feed("data: partial\n").empty());
    EXPECT_EQ(parser.pending_bytes(), 7u);
    EXPECT_TRUE(parser.feed("data: more").empty());
    EXPECT_GT(parser.pending_bytes(), 7u);
}

TEST(Sse, ALineOrEventPastTheLimitIsAnError) {
    SseParser endless_line(64);
    EXPECT_THROW(endless_line.feed(std::string(65, 'x')), RemoteError);
    SseParser endless_event(64);
    std::string many;
    for (int i = 0; i < 10; ++i) many += "data: 0123456789\n";
    EXPECT_THROW(endless_event.feed(many), RemoteError);
    SseParser within(64);
    EXPECT_EQ(within.feed("data: 0123456789\n\n").size(), 1u);
}

}  // namespace
}  // namespace inferscope::remote
