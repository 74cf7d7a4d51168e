#include "engine/remote/sse.h"

#include "engine/core/error.h"

namespace inferscope::remote {

std::vector<ServerSentEvent> SseParser::feed(std::string_view bytes) {
    std::vector<ServerSentEvent> out;
    for (const char c : bytes) {
        if (after_cr_) {
            after_cr_ = false;
            if (c == '\n') continue;
        }
        if (c == '\r' || c == '\n') {
            after_cr_ = c == '\r';
            line_ended(out);
            continue;
        }
        line_.push_back(c);
        if (pending_bytes() > max_event_bytes_) {
            throw RemoteError("the event stream sent an event over " + std::to_string(max_event_bytes_) + " bytes");
        }
    }
    return out;
}

void SseParser::line_ended(std::vector<ServerSentEvent>& out) {
    if (line_.empty()) {  // a blank line dispatches the event, if it has data
        if (has_data_) out.push_back(ServerSentEvent{event_, data_, id_});
        data_.clear();
        event_.clear();
        has_data_ = false;
        return;
    }
    const std::string line = std::move(line_);
    line_.clear();
    if (line.front() == ':') return;  // a comment (often a keep-alive)
    const size_t colon = line.find(':');
    const std::string_view field = std::string_view(line).substr(0, colon);
    std::string_view value = colon == std::string::npos ? std::string_view() : std::string_view(line).substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
        if (has_data_) data_.push_back('\n');
        data_.append(value);
        has_data_ = true;
    } else if (field == "event") {
        event_ = std::string(value);
    } else if (field == "id" && value.find('\0') == std::string_view::npos) {
        id_ = std::string(value);
    }
}

}  // namespace inferscope::remote
