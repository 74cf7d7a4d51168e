#pragma once
// Serving many requests with a fixed number of slots (sequences decoded together):
//  - continuous batching: a slot freed by a finished request takes the next queued one at the
//    next step, and the newcomer's prompt prefill shares that step with the others' decodes;
//  - static batching: a batch of up to N requests is formed when all slots are empty and runs
//    until its longest member ends; finished members keep their slot and go on decoding
//    (discarded) as padding, as a padded batch does.
// The scheduler is the same for real runs and for simulations: a StepExecutor either runs
// the engine or charges the cost a measured cost model predicts.
//
// Times are seconds from the start of the run. A request's latencies are measured from its
// arrival: queue wait = admission - arrival, time to first token = first token - arrival,
// end-to-end = last token - arrival; inter-token latency = (last - first token) / (tokens - 1).
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/kv/kv_block_pool.h"
#include "engine/runtime/sampler.h"

namespace inferscope {

class InferenceSession;

enum class BatchingPolicy { Continuous, Static };
std::string_view batching_policy_name(BatchingPolicy policy);  // "continuous", "static"

struct ServingRequest {
    int id = 0;
    std::vector<TokenId> prompt;
    int max_new_tokens = 16;
    double arrival_s = 0;
    bool stop_at_end_of_generation = false;  // traces fix each request's output length
    std::optional<SamplingParams> sampling;  // the run's sampling (seeded per id) when absent
    int logprobs = -1;  // log-probabilities per generated token: -1 none, 0 the token's own, k also the top k
};

struct RequestMetrics {
    int id = 0;
    double arrival_s = 0;
    double admitted_s = -1;
    double first_token_s = -1;
    double finished_s = -1;
    int prompt_tokens = 0;
    int cached_prompt_tokens = 0;  // prompt tokens whose K/V came from the prefix cache
    std::vector<TokenId> output;
    std::string stop_reason;  // "length", "end of generation", "cancelled", "error: ..." (a failed step)

    double queue_wait_s() const { return admitted_s - arrival_s; }
    double time_to_first_token_s() const { return first_token_s - arrival_s; }
    double end_to_end_s() const { return finished_s - arrival_s; }
    double inter_token_s() const;  // 0 with fewer than two tokens
};

struct SchedulerStep {
    int64_t index = 0;
    double start_s = 0;
    double duration_s = 0;
    int n_tokens = 0;        // tokens computed (prompt chunks + decodes + padding)
    int prefill_tokens = 0;
    int decode_tokens = 0;   // one per decoding slot (padding included)
    int active_slots = 0;    // slots serving an unfinished request
    int padding_slots = 0;   // static batching: finished members still computed
    int max_context = 0;     // longest sequence after the step
};

// One slot's share of a step: tokens to append to its sequence.
struct SlotWork {
    int slot = 0;
    SeqId seq = 0;
    std::vector<TokenId> tokens;
    int first_position = 0;
    bool wants_token = false;  // the step must produce this slot's next token
    int request_id = 0;
    const SamplingParams* sampling = nullptr;  // the request's own, valid during the step; null: the executor's
    int logprobs = -1;                         // the request's (ServingRequest::logprobs)
};

// What a step produced: the next token of every item that wants one, in order, and beside
// each the log-probabilities its request asked for (empty `top` and logprob 0 otherwise).
struct StepOutput {
    std::vector<TokenId> tokens;
    std::vector<TokenLogprobs> logprobs;  // one per token, or none when no item asked
};

class StepExecutor {
public:
    virtual ~StepExecutor() = default;
    virtual SeqId open_sequence() = 0;
    virtual void close_sequence(SeqId seq) = 0;  // also ends the sequence's sampling state
    // Prefix caching: gives a new, empty sequence the cached K/V of the longest whole-block
    // prefix of `prompt` (never all of it); returns how many tokens it now holds.
    virtual int attach_cached_prefix(SeqId /*seq*/, std::span<const TokenId> /*prompt*/) { return 0; }
    // Runs one step; returns its duration in seconds and fills `out`.
    virtual double run(std::span<const SlotWork> work, StepOutput& out) = 0;
    virtual bool is_end_of_generation(TokenId /*token*/) const { return false; }
};

struct SchedulerOptions {
    BatchingPolicy policy = BatchingPolicy::Continuous;
    int slots = 8;
    int prefill_chunk = 512;  // prompt tokens per step, over all slots
    bool prefix_caching = false;  // admitted requests start from cached blocks of their prompt
};

struct ServingReport {
    BatchingPolicy policy = BatchingPolicy::Continuous;
    std::vector<RequestMetrics> requests;
    std::vector<SchedulerStep> steps;
    double makespan_s = 0;           // first arrival to last token
    int64_t generated_tokens = 0;
    double throughput_tokens_per_s() const { return makespan_s > 0 ? static_cast<double>(generated_tokens) / makespan_s : 0; }
    double mean(double (RequestMetrics::*latency)() const) const;
    double percentile(double (RequestMetrics::*latency)() const, double p) const;  // p in [0, 100]
};

// Handed to the step callback: cancelling a request ends it at once and frees its
// sequence's blocks (a queued one is dropped from the queue).
class ServingControl {
public:
    virtual ~ServingControl() = default;
    virtual void cancel(int request_id) = 0;
    virtual void cancel_all() = 0;
};

using StepCallback = std::function<void(const SchedulerStep&, ServingControl&)>;

// Replays `requests` (sorted by arrival) through the slots, calling `on_step` after every step.
ServingReport serve(std::span<const ServingRequest> requests, const SchedulerOptions& options, StepExecutor& executor,
                    const StepCallback& on_step = {});

// A live source of requests (a server's clients). Before each step the run takes what was
// submitted and cancelled since the last one; with nothing to run it waits; its clock is the
// feed's; it reports every token and every end as it happens. Called on the run's thread.
class RequestFeed {
public:
    virtual ~RequestFeed() = default;
    virtual double now_s() const = 0;  // seconds since the feed started
    // Requests submitted since the last call (arrival_s: their submission), valid ones only
    // (a prompt, at least one new token, unique ids), and the ids whose clients have gone.
    virtual void take(std::vector<ServingRequest>& submitted, std::vector<int>& cancelled) = 0;
    // Blocks until there is something to take or the feed closes.
    virtual void wait() = 0;
    virtual bool closed() const = 0;  // the run then cancels what is left and returns
    // `logprobs`: what the request asked for, null when it asked for none.
    virtual void on_token(const RequestMetrics& request, TokenId token, const TokenLogprobs* logprobs) = 0;
    virtual void on_finished(const RequestMetrics& request) = 0;
};

// Serves `feed` until it closes. A step that throws ends its requests with "error: <what>"
// and the run goes on. Finished requests keep their times, not their tokens, and steps go to
// `on_step` only, so a long-running server's report stays small.
ServingReport serve_live(RequestFeed& feed, const SchedulerOptions& options, StepExecutor& executor,
                         const StepCallback& on_step = {});

// Runs the engine for real: one sequence per slot in `session`, wall-clock durations, tokens
// sampled per request with its own sampling, else with `sampling` seeded by the request id.
std::unique_ptr<StepExecutor> make_engine_executor(InferenceSession& session, const SamplingParams& sampling);

}  // namespace inferscope
