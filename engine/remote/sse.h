#pragma once
// Server-sent events (the HTML standard's text/event-stream), as OpenAI-compatible servers
// stream completions: "data:", "event:" and "id:" fields, a blank line ending each event,
// lines starting with ':' ignored as comments, and the data lines of one event joined with
// '\n'. Bytes may arrive split anywhere, with LF, CRLF or CR line ends.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope::remote {

struct ServerSentEvent {
    std::string event;  // the "event:" field; empty for the default "message"
    std::string data;
    std::string id;
};

class SseParser {
public:
    // A line or an event's data past `max_event_bytes` is an error (a server that never ends a
    // line must not grow memory without bound).
    explicit SseParser(size_t max_event_bytes = 16u << 20) : max_event_bytes_(max_event_bytes) {}

    // The events these bytes complete, in order. Throws RemoteError past the limit.
    std::vector<ServerSentEvent> feed(std::string_view bytes);

    // Bytes held for a line or an event not yet ended (a stream that stops here was cut off
    // mid-event when this is not 0).
    size_t pending_bytes() const { return line_.size() + data_.size(); }

private:
    void line_ended(std::vector<ServerSentEvent>& out);

    size_t max_event_bytes_;
    std::string line_;
    std::string data_, event_, id_;
    bool has_data_ = false;
    bool after_cr_ = false;  // a CR ended the last line: an LF right after it belongs to it
};

}  // namespace inferscope::remote
