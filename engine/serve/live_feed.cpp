#include "engine/serve/live_feed.h"

#include <optional>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope::server {
namespace {

// The scheduler's stop reasons as the OpenAI API names them.
std::string api_finish_reason(const std::string& stop_reason) {
    if (stop_reason == "length") return "length";
    if (stop_reason == "end of generation") return "stop";
    if (stop_reason == "cancelled") return "abort";
    return "error";
}

}  // namespace

LiveFeed::LiveFeed(const Tokenizer& tokenizer, ServeMetrics& metrics) : tokenizer_(tokenizer), metrics_(metrics) {}

bool LiveFeed::submit(ServingRequest request, const std::shared_ptr<RequestChannel>& channel, int& id) {
    {
        std::lock_guard lock(mutex_);
        if (closed_) return false;
        id = next_id_++;
        request.id = id;
        request.arrival_s = now_s();
        channels_[id] = channel;
        submitted_.push_back(std::move(request));
    }
    wake_.notify_all();
    return true;
}

void LiveFeed::cancel(int id) {
    {
        std::lock_guard lock(mutex_);
        if (channels_.count(id) == 0) return;
        cancelled_.push_back(id);
    }
    wake_.notify_all();
}

void LiveFeed::close() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    wake_.notify_all();
}

int LiveFeed::in_flight() const {
    std::lock_guard lock(mutex_);
    return static_cast<int>(channels_.size());
}

void LiveFeed::end_remaining(const std::string& reason, const std::string& error) {
    std::map<int, std::shared_ptr<RequestChannel>> remaining;
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
        std::swap(remaining, channels_);
        submitted_.clear();
    }
    for (auto& [id, channel] : remaining) {
        {
            std::lock_guard lock(channel->mutex);
            channel->finished = true;
            channel->finish_reason = reason;
            channel->error = error;
        }
        channel->changed.notify_all();
    }
}

double LiveFeed::now_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

void LiveFeed::take(std::vector<ServingRequest>& submitted, std::vector<int>& cancelled) {
    std::lock_guard lock(mutex_);
    std::swap(submitted, submitted_);
    std::swap(cancelled, cancelled_);
    submitted_.clear();
    cancelled_.clear();
}

void LiveFeed::wait() {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return closed_ || !submitted_.empty() || !cancelled_.empty(); });
}

bool LiveFeed::closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
}

std::shared_ptr<RequestChannel> LiveFeed::channel_of(int id) const {
    std::lock_guard lock(mutex_);
    const auto found = channels_.find(id);
    return found == channels_.end() ? nullptr : found->second;
}

TokenLogprobText LiveFeed::logprob_text(const TokenLogprobs& logprobs, const std::string& piece, int64_t text_offset) const {
    TokenLogprobText t;
    t.token = piece;
    t.logprob = logprobs.logprob;
    t.text_offset = text_offset;
    for (const auto& [id, logprob] : logprobs.top) t.top.emplace_back(tokenizer_.token_to_piece(id), logprob);
    return t;
}

void LiveFeed::on_token(const RequestMetrics& request, TokenId token, const TokenLogprobs* logprobs) {
    const std::shared_ptr<RequestChannel> channel = channel_of(request.id);
    if (channel == nullptr) return;
    const std::string piece = tokenizer_.token_to_piece(token);
    const std::string text = channel->utf8.push(piece);
    std::optional<TokenLogprobText> entry;
    if (logprobs != nullptr) entry = logprob_text(*logprobs, piece, channel->piece_bytes);
    channel->piece_bytes += static_cast<int64_t>(piece.size());
    const bool first = request.output.size() == 1;
    const double now = first ? request.first_token_s : now_s();
    metrics_.add_generation_token(first ? -1.0 : now - channel->last_token_s);
    if (first) {
        metrics_.observe_first_token(request.first_token_s - request.arrival_s);
        metrics_.add_prefix_cache_lookup(request.prompt_tokens, request.cached_prompt_tokens);
    }
    channel->last_token_s = now;
    {
        std::lock_guard lock(channel->mutex);
        channel->text += text;
        if (entry) channel->logprobs.push_back(std::move(*entry));
        ++channel->completion_tokens;
        if (first) channel->cached_prompt_tokens = request.cached_prompt_tokens;
    }
    channel->changed.notify_all();
}

void LiveFeed::on_finished(const RequestMetrics& request) {
    std::shared_ptr<RequestChannel> channel;
    {
        std::lock_guard lock(mutex_);
        const auto found = channels_.find(request.id);
        if (found == channels_.end()) return;
        channel = found->second;
        channels_.erase(found);
    }
    const std::string reason = api_finish_reason(request.stop_reason);
    metrics_.add_prompt_tokens(request.prompt_tokens);
    metrics_.observe_finished(reason, request.finished_s - request.arrival_s);
    {
        std::lock_guard lock(channel->mutex);
        channel->text += channel->utf8.flush();
        channel->finished = true;
        channel->finish_reason = reason;
        if (reason == "error") channel->error = request.stop_reason.substr(request.stop_reason.find(':') + 2);
    }
    channel->changed.notify_all();
}

}  // namespace inferscope::server
