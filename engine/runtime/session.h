#pragma once
// An inference session: one model on one backend with its paged KV cache. It validates
// batches, grows and frees sequences in the block pool, runs forward passes and tells
// observers about every step.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/kv/kv_cache.h"
#include "engine/backend/step_event.h"

namespace inferscope {

class Model;

struct SessionOptions {
    int n_threads = 0;      // 0: one per physical core
    int n_ctx = 0;          // tokens per sequence; 0: the model's context length, at most 4096
    KvDtype kv_dtype = KvDtype::F16;
    int block_tokens = 16;  // tokens per KV block
    // Sequences that can be resident at full context at once; the sliding-window layers'
    // pool holds the window and one pass for this many (more, shorter ones share the global
    // pool but may find the local one full first).
    int max_sequences = 1;
    ActivationPrecision activation_precision;  // inputs of the linear layers (backend/activation_precision.h)
    // Sliding-window layers keep only their window's blocks (a pool of their own). false:
    // every layer keeps every block, as a cache without the window would.
    bool recycle_window_blocks = true;
};

// With sliding-window layers kept apart, a batch runs in parts of at most this many tokens,
// so that their pool need only hold the window and one part per sequence (llama.cpp's
// default micro-batch).
constexpr int kWindowMicroBatchTokens = 512;

class InferenceSession {
public:
    // Uses the CPU backend when `backend` is null. Throws CapacityError when the KV cache
    // cannot be allocated.
    InferenceSession(std::shared_ptr<const Model> model, const SessionOptions& options,
                     std::unique_ptr<Backend> backend = nullptr);

    const Model& model() const { return *model_; }
    const std::shared_ptr<const Model>& model_ptr() const { return model_; }
    Backend& backend() { return *backend_; }
    const Backend& backend() const { return *backend_; }
    const KvCache& kv_cache() const { return cache_; }
    int context_size() const { return n_ctx_; }
    int thread_count() const { return n_threads_; }

    SeqId new_sequence();
    void free_sequence(SeqId seq);
    // Keeps the sequence's first n_tokens tokens. Where sliding-window layers have recycled
    // the window of the new end, the kept tokens past the cached prefix are recomputed (one
    // more step for the observers); when that does not fit, the sequence is left empty and
    // the CapacityError passed on.
    void truncate_sequence(SeqId seq, int n_tokens);
    // A new sequence sharing all of `parent`'s tokens and blocks (copied on first write).
    SeqId fork_sequence(SeqId parent);
    // Starts an empty sequence with the cached blocks of the longest whole-block prefix of
    // `tokens` (prefix caching); returns how many tokens need no computing.
    int attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens);
    int sequence_length(SeqId seq) const { return cache_.sequence_length(seq); }

    // Runs one forward pass. Each sequence's tokens must continue it: positions
    // length, length+1, ... in batch order. Returns logits [n_outputs x n_vocab] (valid
    // until the next call). Throws InvalidArgument for malformed batches and CapacityError
    // when a sequence would exceed the context or the pool; the cache is then unchanged. A
    // batch that runs in parts is checked against the global pool as a whole first; should a
    // later part still fail (the local pool full, the backend), a sequence whose old window
    // was recycled meanwhile is emptied instead.
    std::span<const float> decode(std::span<const BatchToken> batch, std::optional<StepPhase> phase = std::nullopt);

    // Runs the backend's warm-up passes (Backend::warm_up_pass_tokens: a device's kernel
    // compilation) on a scratch sequence, then has it prepare prompts of other lengths up to the
    // context and passes wanting up to `most_logit_rows` rows of logits (0: one per sequence the
    // session holds; Backend::prepare_passes), so that the first request's timings are those of
    // inference alone. Observers are not told and the step count does not move; the cache is
    // left as it was. Does nothing for a backend without a warm-up (the CPU).
    void warm_up(int most_logit_rows = 0);
    // Whether warm_up() has passes to run.
    bool needs_warm_up() const { return !backend_->warm_up_pass_tokens().empty(); }

    using StepObserver = std::function<void(const StepEvent&)>;
    int add_step_observer(StepObserver observer);
    void remove_step_observer(int id);

private:
    std::map<SeqId, int> validate(std::span<const BatchToken> batch) const;
    static StepPhase infer_phase(const std::map<SeqId, int>& tokens_per_sequence);
    void run_part(std::span<const BatchToken> part, float* logits);
    void roll_back(const std::map<SeqId, int>& old_length);

    std::shared_ptr<const Model> model_;
    int n_ctx_;
    int n_threads_;
    int max_sequences_;
    int64_t largest_checked_batch_ = 0;    // tokens of the largest batch checked against memory
    int64_t largest_checked_outputs_ = 0;  // and its rows of logits
    std::unique_ptr<Backend> backend_;
    KvCache cache_;
    std::vector<float> logits_;
    SeqId next_seq_ = 0;
    int64_t step_ = 0;
    int next_observer_id_ = 0;
    std::map<int, StepObserver> observers_;
};

// A sequence of `session` that is freed however the scope is left (return or exception).
class ScopedSequence {
public:
    explicit ScopedSequence(InferenceSession& session) : session_(session), id_(session.new_sequence()) {}
    ~ScopedSequence() { session_.free_sequence(id_); }
    ScopedSequence(const ScopedSequence&) = delete;
    ScopedSequence& operator=(const ScopedSequence&) = delete;
    SeqId id() const { return id_; }
    // Starts over with an empty sequence.
    void reset() { session_.truncate_sequence(id_, 0); }

private:
    InferenceSession& session_;
    SeqId id_;
};

}  // namespace inferscope
