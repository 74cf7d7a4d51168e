#include "engine/runtime/session.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <utility>

#include "engine/backend/default_backend.h"
#include "engine/core/error.h"
#include "engine/core/system_memory.h"
#include "engine/core/thread_pool.h"
#include "engine/model/model.h"

namespace inferscope {

std::string_view step_phase_name(StepPhase phase) {
    switch (phase) {
        case StepPhase::Prefill: return "prefill";
        case StepPhase::Decode: return "decode";
        case StepPhase::Mixed: return "mixed";
    }
    return "unknown";
}

namespace {

constexpr int kDefaultMaxContext = 4096;

// The largest context a model file may declare (the loader's bound) is also the most a
// session may ask for.
constexpr int kMaxContextTokens = 1 << 24;
// Sequences one session decodes together; far past where batching stops paying.
constexpr int kMaxSequences = 4096;
// Block tables, reference counts, hashes and queue links per KV block, roughly.
constexpr uint64_t kBookkeepingBytesPerBlock = 64;

int resolve_context(const Model& model, int requested) {
    const int model_ctx = model.config().context_length;
    if (requested < 0) throw InvalidArgument("context size must be positive, got " + std::to_string(requested));
    if (requested > kMaxContextTokens) {
        throw InvalidArgument("context size " + std::to_string(requested) + ": at most " + std::to_string(kMaxContextTokens) +
                              " tokens (the model was trained for " + std::to_string(model_ctx) + ")");
    }
    if (requested == 0) return std::min(model_ctx, kDefaultMaxContext);
    return requested;
}

// Refused before anything is allocated: a pool that could never be filled would otherwise
// take seconds of bookkeeping and gigabytes before the first allocation failed. The pool's
// pages are touched only as tokens arrive, so the bound is all the memory there is, not what
// is free now.
void require_memory_for(const KvCacheLayout& layout, int n_ctx, int max_sequences) {
    const uint64_t blocks = static_cast<uint64_t>(layout.global.n_blocks) + static_cast<uint64_t>(layout.local.n_blocks);
    const uint64_t needed = layout.pool_bytes() + blocks * kBookkeepingBytesPerBlock;
    const uint64_t total = total_memory_bytes();
    if (total == 0 || needed <= total) return;
    throw CapacityError("the KV cache for " + std::to_string(n_ctx) + " tokens x " + std::to_string(max_sequences) +
                        " sequences needs " + format_bytes(needed) + " and this machine has " + format_bytes(total) +
                        " of memory and swap in all; lower the context size (-c) or the number of sequences");
}

KvCacheLayout make_layout(const ModelConfig& c, const SessionOptions& options, int n_ctx) {
    if (options.block_tokens <= 0 || options.max_sequences <= 0) {
        throw InvalidArgument("KV block size and sequence count must be positive");
    }
    if (options.max_sequences > kMaxSequences) {
        throw InvalidArgument(std::to_string(options.max_sequences) + " sequences: at most " + std::to_string(kMaxSequences) +
                              " decode together");
    }
    KvLayout layout;
    layout.n_layer = c.n_layer;
    layout.n_head_kv = c.n_head_kv;
    layout.head_dim = c.head_dim;
    layout.dtype = options.kv_dtype;
    layout.block_tokens = options.block_tokens;
    const int blocks_per_sequence = (n_ctx + options.block_tokens - 1) / options.block_tokens;
    const int64_t n_blocks = static_cast<int64_t>(blocks_per_sequence) * options.max_sequences;
    if (n_blocks > std::numeric_limits<int32_t>::max()) {
        throw CapacityError("a KV cache of " + std::to_string(n_ctx) + " tokens x " + std::to_string(options.max_sequences) +
                            " sequences has more blocks than a block id can number; lower the context size or the sequences");
    }
    layout.n_blocks = static_cast<int>(n_blocks);
    std::vector<bool> is_local(static_cast<size_t>(c.n_layer), false);
    const bool windowed = options.recycle_window_blocks && c.has_local_layers() && c.sliding_window < n_ctx;
    if (!windowed) return split_kv_layout(layout, is_local, 0, 0);
    for (int il = 0; il < c.n_layer; ++il) is_local[static_cast<size_t>(il)] = c.is_local_layer(il);
    const int local_per_sequence =
        std::min(blocks_per_sequence,
                 sliding_window_blocks(c.sliding_window, options.block_tokens, std::min(kWindowMicroBatchTokens, n_ctx)));
    return split_kv_layout(layout, is_local, c.sliding_window, local_per_sequence * options.max_sequences);
}

// A batch's activations (every token's rows through a layer) and its logits, refused before
// they are allocated when the machine cannot hold them.
void require_memory_for_batch(const ModelConfig& c, int64_t n_tokens, int64_t n_outputs) {
    const auto floats_per_token = static_cast<uint64_t>(3 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.n_ff + 2 * c.rope_dim);
    const uint64_t needed = sizeof(float) * (static_cast<uint64_t>(n_tokens) * floats_per_token +
                                             static_cast<uint64_t>(n_outputs) * static_cast<uint64_t>(c.n_vocab));
    const uint64_t available = available_memory_bytes();
    if (available == 0 || needed <= available) return;
    throw CapacityError("a batch of " + std::to_string(n_tokens) + " tokens (" + std::to_string(n_outputs) +
                        " with logits) needs " + format_bytes(needed) + " of activations and logits and this machine has " +
                        format_bytes(available) + " available; decode it in smaller batches");
}

KvCacheLayout checked_layout(const ModelConfig& c, const SessionOptions& options, int n_ctx) {
    KvCacheLayout layout = make_layout(c, options, n_ctx);
    require_memory_for(layout, n_ctx, options.max_sequences);
    return layout;
}

}  // namespace

InferenceSession::InferenceSession(std::shared_ptr<const Model> model, const SessionOptions& options,
                                   std::unique_ptr<Backend> backend)
    : model_(std::move(model)),
      n_ctx_(resolve_context(*model_, options.n_ctx)),
      n_threads_(options.n_threads > 0 ? options.n_threads : ThreadPool::default_thread_count()),
      max_sequences_(options.max_sequences),
      backend_(backend ? std::move(backend) : make_default_backend(model_, n_threads_)),
      cache_(checked_layout(model_->config(), options, n_ctx_)) {
    backend_->set_activation_precision(options.activation_precision);
    backend_->allocate_kv(cache_.layout());
}

SeqId InferenceSession::new_sequence() {
    const SeqId seq = next_seq_++;
    cache_.add_sequence(seq);
    return seq;
}

void InferenceSession::free_sequence(SeqId seq) { cache_.free_sequence(seq); }

void InferenceSession::truncate_sequence(SeqId seq, int n_tokens) {
    try {
        cache_.truncate(seq, n_tokens);
    } catch (const CapacityError&) {
        // The local layers' window of the new end was recycled: start the sequence again
        // from what the prefix cache still holds and recompute the rest.
        const auto held = cache_.sequence_tokens(seq);
        const std::vector<TokenId> kept(held.begin(), held.begin() + n_tokens);
        cache_.truncate(seq, 0);
        const int cached = cache_.attach_cached_prefix(seq, kept);
        Batch rest;
        for (int pos = cached; pos < n_tokens; ++pos) rest.push_back({kept[static_cast<size_t>(pos)], seq, pos, false});
        try {
            if (!rest.empty()) decode(rest);
        } catch (...) {
            cache_.truncate(seq, 0);
            throw;
        }
    }
}

SeqId InferenceSession::fork_sequence(SeqId parent) {
    const SeqId child = next_seq_++;
    cache_.fork_sequence(parent, child);
    return child;
}

int InferenceSession::attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens) {
    return cache_.attach_cached_prefix(seq, tokens);
}

std::map<SeqId, int> InferenceSession::validate(std::span<const BatchToken> batch) const {
    if (batch.empty()) throw InvalidArgument("empty batch");
    const int n_vocab = model_->config().n_vocab;
    std::map<SeqId, int> new_length;
    for (const BatchToken& t : batch) {
        if (t.token < 0 || t.token >= n_vocab) {
            throw InvalidArgument("token id " + std::to_string(t.token) + " is outside the vocabulary [0, " +
                                  std::to_string(n_vocab) + ")");
        }
        if (!cache_.has_sequence(t.seq)) throw InvalidArgument("sequence " + std::to_string(t.seq) + " does not exist");
        auto [it, inserted] = new_length.try_emplace(t.seq, cache_.sequence_length(t.seq));
        if (t.pos != it->second) {
            throw InvalidArgument("sequence " + std::to_string(t.seq) + ": token at position " + std::to_string(t.pos) +
                                  " does not continue the sequence (next position is " + std::to_string(it->second) +
                                  ")");
        }
        if (t.pos >= n_ctx_) {
            throw CapacityError("sequence " + std::to_string(t.seq) + " would exceed the context size of " +
                                std::to_string(n_ctx_) + " tokens (position " + std::to_string(t.pos) + ")");
        }
        ++it->second;
    }
    return new_length;
}

StepPhase InferenceSession::infer_phase(const std::map<SeqId, int>& tokens_per_sequence) {
    bool any_single = false;
    bool any_multi = false;
    for (const auto& [seq, count] : tokens_per_sequence) (count == 1 ? any_single : any_multi) = true;
    if (any_multi && any_single) return StepPhase::Mixed;
    return any_multi ? StepPhase::Prefill : StepPhase::Decode;
}

// Grows the part's sequences, runs it and registers what it computed; a sliding-window pool
// then recycles the blocks its sequences have left behind.
void InferenceSession::run_part(std::span<const BatchToken> part, float* logits) {
    std::map<SeqId, std::vector<TokenId>> appended;  // per sequence, in batch order
    for (const BatchToken& t : part) appended[t.seq].push_back(t.token);
    for (const auto& [seq, tokens] : appended) {
        // Copied at once, so that a later sequence's failure can roll this one back to
        // blocks that hold what they claim to.
        const KvBlockCopies copies = cache_.append(seq, tokens);
        if (!copies.global.empty()) backend_->copy_kv_blocks(KvGroup::Global, copies.global);
        if (!copies.local.empty()) backend_->copy_kv_blocks(KvGroup::Local, copies.local);
    }
    backend_->forward(part, cache_, logits);
    model_->require_file_unchanged();
    for (const auto& [seq, tokens] : appended) cache_.commit(seq);
}

void InferenceSession::roll_back(const std::map<SeqId, int>& old_length) {
    for (const auto& [seq, length] : old_length) {
        try {
            cache_.truncate(seq, length);
        } catch (const CapacityError&) {
            cache_.truncate(seq, 0);
        }
    }
}

std::span<const float> InferenceSession::decode(std::span<const BatchToken> batch, std::optional<StepPhase> phase) {
    const std::map<SeqId, int> new_length = validate(batch);
    std::map<SeqId, int> old_length;
    std::map<SeqId, int> tokens_per_sequence;
    for (const BatchToken& t : batch) {
        old_length.try_emplace(t.seq, cache_.sequence_length(t.seq));
        ++tokens_per_sequence[t.seq];
    }
    const auto n_vocab = static_cast<size_t>(model_->config().n_vocab);
    const auto n_outputs = std::count_if(batch.begin(), batch.end(), [](const BatchToken& t) { return t.output; });
    // Checked when a batch is larger than any before: reading /proc/meminfo each decode step
    // would cost more than some steps.
    if (static_cast<int64_t>(batch.size()) > largest_checked_batch_ || n_outputs > largest_checked_outputs_) {
        require_memory_for_batch(model_->config(), static_cast<int64_t>(batch.size()), n_outputs);
        largest_checked_batch_ = std::max<int64_t>(largest_checked_batch_, static_cast<int64_t>(batch.size()));
        largest_checked_outputs_ = std::max<int64_t>(largest_checked_outputs_, n_outputs);
    }
    logits_.resize(static_cast<size_t>(n_outputs) * n_vocab);
    const size_t part_tokens = cache_.local() != nullptr ? static_cast<size_t>(kWindowMicroBatchTokens) : batch.size();
    if (part_tokens < batch.size()) cache_.check_batch(tokens_per_sequence);

    const auto start = std::chrono::steady_clock::now();
    try {
        size_t rows_done = 0;
        for (size_t begin = 0; begin < batch.size(); begin += part_tokens) {
            const auto part = batch.subspan(begin, std::min(part_tokens, batch.size() - begin));
            run_part(part, logits_.data() + rows_done * n_vocab);
            rows_done += static_cast<size_t>(std::count_if(part.begin(), part.end(), [](const BatchToken& t) { return t.output; }));
        }
    } catch (...) {
        roll_back(old_length);
        throw;
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;

    StepEvent event;
    event.step = step_++;
    event.phase = phase.value_or(infer_phase(tokens_per_sequence));
    event.n_tokens = static_cast<int>(batch.size());
    event.n_sequences = static_cast<int>(new_length.size());
    for (const auto& [seq, length] : new_length) event.context_length = std::max(event.context_length, length);
    event.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
    event.kv_bytes_in_use = cache_.bytes_in_use();
    event.kv_bytes_reserved = cache_.bytes_reserved();
    event.gpu_ops = backend_->last_forward_gpu_times();
    for (const OpTime& op : event.gpu_ops) event.gpu_ns += op.gpu_ns;
    for (const auto& [id, observer] : observers_) observer(event);
    return logits_;
}

void InferenceSession::warm_up(int most_logit_rows) {
    const std::vector<int> passes = backend_->warm_up_pass_tokens();
    if (passes.empty()) return;
    // Restored however the warm-up ends: requests alone are steps for the observers.
    struct QuietSteps {
        InferenceSession& session;
        std::map<int, StepObserver> observers = std::exchange(session.observers_, {});
        int64_t step = session.step_;
        ~QuietSteps() {
            session.observers_ = std::move(observers);
            session.step_ = step;
        }
    } quiet{*this};
    ScopedSequence seq(*this);
    int32_t length = 0;
    for (const int tokens : passes) {
        const int32_t pass_tokens = std::min(tokens, n_ctx_ - length);
        if (pass_tokens <= 0) break;
        Batch batch;
        for (int32_t i = 0; i < pass_tokens; ++i) batch.push_back({0, seq.id(), length + i, i + 1 == pass_tokens});
        decode(batch);
        length += pass_tokens;
    }
    backend_->prepare_passes(n_ctx_, most_logit_rows > 0 ? most_logit_rows : max_sequences_);
}

int InferenceSession::add_step_observer(StepObserver observer) {
    observers_.emplace(next_observer_id_, std::move(observer));
    return next_observer_id_++;
}

void InferenceSession::remove_step_observer(int id) { observers_.erase(id); }

}  // namespace inferscope
