#include "engine/runtime/scheduler.h"

#include "engine/core/sample_stats.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {

std::string_view batching_policy_name(BatchingPolicy policy) {
    return policy == BatchingPolicy::Continuous ? "continuous" : "static";
}

double RequestMetrics::inter_token_s() const {
    return output.size() < 2 ? 0.0 : (finished_s - first_token_s) / static_cast<double>(output.size() - 1);
}

double ServingReport::mean(double (RequestMetrics::*latency)() const) const {
    double total = 0;
    int count = 0;
    for (const RequestMetrics& r : requests) {
        if (r.finished_s < 0) continue;
        total += (r.*latency)();
        ++count;
    }
    return count > 0 ? total / count : 0.0;
}

double ServingReport::percentile(double (RequestMetrics::*latency)() const, double p) const {
    std::vector<double> values;
    for (const RequestMetrics& r : requests) {
        if (r.finished_s >= 0) values.push_back((r.*latency)());
    }
    return nearest_rank_percentile(std::move(values), p);
}

namespace {

struct Slot {
    bool busy = false;
    bool padding = false;  // static batching: request finished, slot still computed
    int request = -1;
    SeqId seq = 0;
    size_t prompt_done = 0;
    int length = 0;  // tokens in the slot's sequence (the next position to write)
    TokenId last_token = 0;
};

class ServingRun final : public ServingControl {
public:
    ServingRun(std::span<const ServingRequest> requests, const SchedulerOptions& options, StepExecutor& executor)
        : options_(options), executor_(executor), slots_(static_cast<size_t>(options.slots)) {
        report_.policy = options.policy;
        for (const ServingRequest& r : requests) add_request(r);
        now_ = requests.empty() ? 0.0 : requests.front().arrival_s;
        start_ = now_;
    }
    ServingRun(RequestFeed& feed, const SchedulerOptions& options, StepExecutor& executor)
        : options_(options), executor_(executor), slots_(static_cast<size_t>(options.slots)), feed_(&feed) {
        report_.policy = options.policy;
        now_ = feed.now_s();
        start_ = now_;
    }

    ServingReport run(const StepCallback& on_step);
    void cancel(int request_id) override;
    void cancel_all() override;

private:
    void add_request(const ServingRequest& request);
    // Live runs: the feed's clock, submissions and cancellations; false once the feed closed.
    bool take_from_feed();
    void admit_arrivals();
    void fill_slots();
    std::vector<SlotWork> plan_step() const;
    SchedulerStep describe_step(int64_t index, std::span<const SlotWork> work) const;
    void apply_tokens(std::span<const SlotWork> work, const StepOutput& out);
    void fail_step(std::span<const SlotWork> work, const std::string& what);
    void finish(Slot& slot, const std::string& reason);
    void release(Slot& slot);
    void end_static_batch_if_done();
    bool all_slots_idle() const {
        return std::none_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.busy; });
    }

    std::vector<ServingRequest> requests_;
    SchedulerOptions options_;
    StepExecutor& executor_;
    std::vector<Slot> slots_;
    std::deque<int> queue_;
    size_t next_arrival_ = 0;
    double now_ = 0;
    double start_ = 0;
    ServingReport report_;
    RequestFeed* feed_ = nullptr;
    std::vector<ServingRequest> submitted_;
    std::vector<int> cancelled_;
};

void ServingRun::add_request(const ServingRequest& request) {
    requests_.push_back(request);
    RequestMetrics m;
    m.id = request.id;
    m.arrival_s = request.arrival_s;
    m.prompt_tokens = static_cast<int>(request.prompt.size());
    report_.requests.push_back(m);
}

bool ServingRun::take_from_feed() {
    if (feed_ == nullptr) return true;
    now_ = std::max(now_, feed_->now_s());
    if (feed_->closed()) return false;
    submitted_.clear();
    cancelled_.clear();
    feed_->take(submitted_, cancelled_);
    for (ServingRequest& r : submitted_) {
        r.arrival_s = std::min(r.arrival_s, now_);  // keeps the arrivals sorted
        add_request(r);
    }
    for (int id : cancelled_) cancel(id);
    return true;
}

void ServingRun::admit_arrivals() {
    while (next_arrival_ < requests_.size() && requests_[next_arrival_].arrival_s <= now_) {
        const int index = static_cast<int>(next_arrival_++);
        if (report_.requests[static_cast<size_t>(index)].stop_reason != "cancelled") queue_.push_back(index);
    }
}

void ServingRun::fill_slots() {
    // Static batching forms a new batch only once the previous one has ended entirely.
    if (options_.policy == BatchingPolicy::Static && !all_slots_idle()) return;
    for (Slot& slot : slots_) {
        if (slot.busy || queue_.empty()) continue;
        slot = Slot{};
        slot.busy = true;
        slot.request = queue_.front();
        queue_.pop_front();
        slot.seq = executor_.open_sequence();
        RequestMetrics& m = report_.requests[static_cast<size_t>(slot.request)];
        m.admitted_s = now_;
        if (options_.prefix_caching) {
            const int cached = executor_.attach_cached_prefix(slot.seq, requests_[static_cast<size_t>(slot.request)].prompt);
            slot.prompt_done = static_cast<size_t>(cached);
            slot.length = cached;
            m.cached_prompt_tokens = cached;
        }
    }
}

std::vector<SlotWork> ServingRun::plan_step() const {
    std::vector<SlotWork> work;
    int prefill_budget = options_.prefill_chunk;
    for (size_t i = 0; i < slots_.size(); ++i) {
        const Slot& slot = slots_[i];
        if (!slot.busy) continue;
        const ServingRequest& request = requests_[static_cast<size_t>(slot.request)];
        SlotWork w;
        w.slot = static_cast<int>(i);
        w.seq = slot.seq;
        w.request_id = request.id;
        w.sampling = request.sampling ? &*request.sampling : nullptr;
        w.logprobs = request.logprobs;
        if (slot.prompt_done < request.prompt.size()) {
            const size_t take = std::min(request.prompt.size() - slot.prompt_done, static_cast<size_t>(std::max(0, prefill_budget)));
            if (take == 0) continue;  // waits for the next step's budget
            prefill_budget -= static_cast<int>(take);
            w.tokens.assign(request.prompt.begin() + static_cast<std::ptrdiff_t>(slot.prompt_done),
                            request.prompt.begin() + static_cast<std::ptrdiff_t>(slot.prompt_done + take));
            w.first_position = slot.length;
            w.wants_token = slot.prompt_done + take == request.prompt.size();
        } else {
            w.tokens = {slot.last_token};
            w.first_position = slot.length;
            w.wants_token = true;
        }
        work.push_back(std::move(w));
    }
    return work;
}

SchedulerStep ServingRun::describe_step(int64_t index, std::span<const SlotWork> work) const {
    SchedulerStep step;
    step.index = index;
    step.start_s = now_ - start_;
    for (const SlotWork& w : work) {
        step.n_tokens += static_cast<int>(w.tokens.size());
        const Slot& slot = slots_[static_cast<size_t>(w.slot)];
        const bool prefill = slot.prompt_done < requests_[static_cast<size_t>(slot.request)].prompt.size();
        (prefill ? step.prefill_tokens : step.decode_tokens) += static_cast<int>(w.tokens.size());
        (slot.padding ? step.padding_slots : step.active_slots) += 1;
        step.max_context = std::max(step.max_context, w.first_position + static_cast<int>(w.tokens.size()));
    }
    return step;
}

ServingReport ServingRun::run(const StepCallback& on_step) {
    StepOutput out;
    for (int64_t index = 0;;) {
        if (!take_from_feed()) {
            cancel_all();
            break;
        }
        admit_arrivals();
        fill_slots();
        const std::vector<SlotWork> work = plan_step();
        if (work.empty()) {
            if (next_arrival_ < requests_.size()) {
                now_ = std::max(now_, requests_[next_arrival_].arrival_s);  // idle until the next arrival
            } else if (feed_ != nullptr) {
                feed_->wait();
            } else if (queue_.empty()) {
                break;
            }
            continue;
        }
        SchedulerStep step = describe_step(index++, work);
        try {
            out.tokens.clear();
            out.logprobs.clear();
            step.duration_s = executor_.run(work, out);
        } catch (const DeviceLostError& e) {
            if (feed_ != nullptr) fail_step(work, e.what());
            throw;  // nothing more can run on the device: a live run ends here
        } catch (const std::exception& e) {
            if (feed_ == nullptr) throw;
            fail_step(work, e.what());
            continue;
        }
        now_ = feed_ != nullptr ? std::max(now_ + step.duration_s, feed_->now_s()) : now_ + step.duration_s;
        apply_tokens(work, out);
        if (feed_ == nullptr) report_.steps.push_back(step);
        if (on_step) on_step(step, *this);
    }
    report_.makespan_s = now_ - start_;
    for (const RequestMetrics& m : report_.requests) report_.generated_tokens += static_cast<int64_t>(m.output.size());
    return std::move(report_);
}

void ServingRun::apply_tokens(std::span<const SlotWork> work, const StepOutput& out) {
    const std::vector<TokenId>& tokens = out.tokens;
    size_t next = 0;
    for (const SlotWork& w : work) {
        Slot& slot = slots_[static_cast<size_t>(w.slot)];
        const ServingRequest& request = requests_[static_cast<size_t>(slot.request)];
        if (slot.prompt_done < request.prompt.size()) slot.prompt_done += w.tokens.size();
        slot.length += static_cast<int>(w.tokens.size());
        if (!w.wants_token) continue;
        if (next >= tokens.size()) throw Error("step executor returned too few tokens");
        const TokenLogprobs* logprobs = w.logprobs >= 0 && next < out.logprobs.size() ? &out.logprobs[next] : nullptr;
        const TokenId token = tokens[next++];
        slot.last_token = token;
        if (slot.padding) continue;
        RequestMetrics& m = report_.requests[static_cast<size_t>(slot.request)];
        if (m.output.empty()) m.first_token_s = now_;
        m.output.push_back(token);
        if (feed_ != nullptr) feed_->on_token(m, token, logprobs);
        if (static_cast<int>(m.output.size()) >= request.max_new_tokens) {
            finish(slot, "length");
        } else if (request.stop_at_end_of_generation && executor_.is_end_of_generation(token)) {
            finish(slot, "end of generation");
        }
    }
    end_static_batch_if_done();
}

// The step's requests end with the error; the cache is as before the step (decode's promise),
// so their sequences are simply closed.
void ServingRun::fail_step(std::span<const SlotWork> work, const std::string& what) {
    for (const SlotWork& w : work) {
        Slot& slot = slots_[static_cast<size_t>(w.slot)];
        if (!slot.busy) continue;
        if (slot.padding) {
            release(slot);
            continue;
        }
        finish(slot, "error: " + what);
        if (slot.busy) release(slot);
    }
    end_static_batch_if_done();
}

// A static batch ends when none of its members is still generating.
void ServingRun::end_static_batch_if_done() {
    if (options_.policy != BatchingPolicy::Static) return;
    if (!std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return !s.busy || s.padding; })) return;
    for (Slot& slot : slots_) {
        if (slot.busy) release(slot);
    }
}

void ServingRun::finish(Slot& slot, const std::string& reason) {
    RequestMetrics& m = report_.requests[static_cast<size_t>(slot.request)];
    m.finished_s = now_;
    m.stop_reason = reason;
    if (feed_ != nullptr) feed_->on_finished(m);
    if (options_.policy == BatchingPolicy::Static) {
        slot.padding = true;  // keeps its sequence and is computed until the batch ends
    } else {
        release(slot);
    }
}

void ServingRun::release(Slot& slot) {
    executor_.close_sequence(slot.seq);
    if (feed_ != nullptr) {
        requests_[static_cast<size_t>(slot.request)].prompt = {};
        report_.requests[static_cast<size_t>(slot.request)].output = {};
    }
    slot = Slot{};
}

void ServingRun::cancel(int request_id) {
    const auto index = std::find_if(report_.requests.begin(), report_.requests.end(),
                                    [&](const RequestMetrics& m) { return m.id == request_id; }) -
                       report_.requests.begin();
    if (index >= static_cast<std::ptrdiff_t>(report_.requests.size())) return;
    RequestMetrics& m = report_.requests[static_cast<size_t>(index)];
    if (m.finished_s >= 0 || m.stop_reason == "cancelled") return;
    m.stop_reason = "cancelled";
    for (Slot& slot : slots_) {
        if (slot.busy && slot.request == index) {
            m.finished_s = now_;
            if (feed_ != nullptr) feed_->on_finished(m);
            release(slot);  // the blocks return to the pool now, not when the batch ends
            end_static_batch_if_done();
            return;
        }
    }
    std::erase(queue_, static_cast<int>(index));  // a request yet to arrive is skipped when it does
    if (feed_ != nullptr) {
        m.finished_s = now_;
        feed_->on_finished(m);
    }
}

void ServingRun::cancel_all() {
    for (Slot& slot : slots_) {
        if (!slot.busy) continue;
        RequestMetrics& m = report_.requests[static_cast<size_t>(slot.request)];
        if (!slot.padding) {
            m.finished_s = now_;
            m.stop_reason = "cancelled";
            if (feed_ != nullptr) feed_->on_finished(m);
        }
        release(slot);
    }
    for (int index : queue_) {
        RequestMetrics& m = report_.requests[static_cast<size_t>(index)];
        m.stop_reason = "cancelled";
        if (feed_ != nullptr) {
            m.finished_s = now_;
            feed_->on_finished(m);
        }
    }
    queue_.clear();
    next_arrival_ = requests_.size();
}

// Runs the engine: one forward pass per step, next tokens sampled per request (a sampler per
// sequence, made at its first token and dropped with the sequence).
class EngineExecutor final : public StepExecutor {
public:
    EngineExecutor(InferenceSession& session, const SamplingParams& sampling) : session_(session), sampling_(sampling) {}
    SeqId open_sequence() override { return session_.new_sequence(); }
    void close_sequence(SeqId seq) override {
        samplers_.erase(seq);
        session_.free_sequence(seq);
    }
    bool is_end_of_generation(TokenId token) const override {
        return session_.model().tokenizer().is_end_of_generation(token);
    }
    int attach_cached_prefix(SeqId seq, std::span<const TokenId> prompt) override {
        return session_.attach_cached_prefix(seq, prompt);
    }

    double run(std::span<const SlotWork> work, StepOutput& out) override {
        batch_.clear();
        for (const SlotWork& w : work) {
            for (size_t i = 0; i < w.tokens.size(); ++i) {
                batch_.push_back({w.tokens[i], w.seq, w.first_position + static_cast<int32_t>(i),
                                  w.wants_token && i + 1 == w.tokens.size()});
            }
        }
        const auto start = std::chrono::steady_clock::now();
        const std::span<const float> logits = session_.decode(batch_);
        const auto n_vocab = static_cast<size_t>(session_.model().config().n_vocab);
        const bool any_logprobs = std::any_of(work.begin(), work.end(), [](const SlotWork& w) { return w.logprobs >= 0; });
        size_t row = 0;
        for (const SlotWork& w : work) {
            if (!w.wants_token) continue;
            const auto history = session_.kv_cache().sequence_tokens(w.seq);
            const std::span<const float> row_logits = logits.subspan(row * n_vocab, n_vocab);
            const TokenId token = sampler_of(w).sample(row_logits, history);
            out.tokens.push_back(token);
            if (any_logprobs)
                out.logprobs.push_back(w.logprobs >= 0 ? token_logprobs(row_logits, token, w.logprobs) : TokenLogprobs{});
            ++row;
        }
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }

private:
    Sampler& sampler_of(const SlotWork& w) {
        auto found = samplers_.find(w.seq);
        if (found != samplers_.end()) return found->second;
        SamplingParams p = sampling_;
        if (w.sampling != nullptr) {
            p = *w.sampling;
        } else {
            p.seed = sampling_.seed + static_cast<uint64_t>(w.request_id);
        }
        return samplers_.emplace(w.seq, Sampler(p)).first->second;
    }

    InferenceSession& session_;
    SamplingParams sampling_;
    std::map<SeqId, Sampler> samplers_;
    Batch batch_;
};

}  // namespace

ServingReport serve(std::span<const ServingRequest> requests, const SchedulerOptions& options, StepExecutor& executor,
                    const StepCallback& on_step) {
    if (options.slots < 1 || options.prefill_chunk < 1) throw InvalidArgument("slots and prefill chunk must be positive");
    for (size_t i = 0; i < requests.size(); ++i) {
        if (requests[i].prompt.empty() || requests[i].max_new_tokens < 1) {
            throw InvalidArgument("request " + std::to_string(requests[i].id) + " needs a prompt and at least one new token");
        }
        if (i > 0 && requests[i].arrival_s < requests[i - 1].arrival_s) throw InvalidArgument("requests must be sorted by arrival");
    }
    return ServingRun(requests, options, executor).run(on_step);
}

ServingReport serve_live(RequestFeed& feed, const SchedulerOptions& options, StepExecutor& executor, const StepCallback& on_step) {
    if (options.slots < 1 || options.prefill_chunk < 1) throw InvalidArgument("slots and prefill chunk must be positive");
    return ServingRun(feed, options, executor).run(on_step);
}

std::unique_ptr<StepExecutor> make_engine_executor(InferenceSession& session, const SamplingParams& sampling) {
    return std::make_unique<EngineExecutor>(session, sampling);
}

}  // namespace inferscope
