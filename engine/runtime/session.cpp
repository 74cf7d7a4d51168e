#include "engine/runtime/session.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
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

int resolve_context(const Model& model, int requested) {
    const int model_ctx = model.config().context_length;
    if (requested < 0) throw InvalidArgument("context size must be positive, got " + std::to_string(requested));
    if (requested == 0) return std::min(model_ctx, kDefaultMaxContext);
    return requested;
}

KvLayout make_layout(const ModelConfig& c, const SessionOptions& options, int n_ctx) {
    if (options.block_tokens <= 0 || options.max_sequences <= 0) {
        throw InvalidArgument("KV block size and sequence count must be positive");
    }
    KvLayout layout;
    layout.n_layer = c.n_layer;
    layout.n_head_kv = c.n_head_kv;
    layout.head_dim = c.head_dim;
    layout.dtype = options.kv_dtype;
    layout.block_tokens = options.block_tokens;
    const int blocks_per_sequence = (n_ctx + options.block_tokens - 1) / options.block_tokens;
    layout.n_blocks = blocks_per_sequence * options.max_sequences;
    return layout;
}

}  // namespace

InferenceSession::InferenceSession(std::shared_ptr<const Model> model, const SessionOptions& options,
                                   std::unique_ptr<Backend> backend)
    : model_(std::move(model)),
      n_ctx_(resolve_context(*model_, options.n_ctx)),
      n_threads_(options.n_threads > 0 ? options.n_threads : ThreadPool::default_thread_count()),
      backend_(backend ? std::move(backend) : std::make_unique<CpuBackend>(model_, n_threads_)),
      pool_(make_layout(model_->config(), options, n_ctx_)) {
    backend_->set_activation_precision(options.activation_precision);
    backend_->allocate_kv(pool_.layout());
}

SeqId InferenceSession::new_sequence() {
    const SeqId seq = next_seq_++;
    pool_.add_sequence(seq);
    return seq;
}

void InferenceSession::free_sequence(SeqId seq) { pool_.free_sequence(seq); }

void InferenceSession::truncate_sequence(SeqId seq, int n_tokens) { pool_.truncate(seq, n_tokens); }

SeqId InferenceSession::fork_sequence(SeqId parent) {
    const SeqId child = next_seq_++;
    pool_.fork_sequence(parent, child);
    return child;
}

int InferenceSession::attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens) {
    return pool_.attach_cached_prefix(seq, tokens);
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
        if (!pool_.has_sequence(t.seq)) throw InvalidArgument("sequence " + std::to_string(t.seq) + " does not exist");
        auto [it, inserted] = new_length.try_emplace(t.seq, pool_.sequence_length(t.seq));
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

std::span<const float> InferenceSession::decode(std::span<const BatchToken> batch, std::optional<StepPhase> phase) {
    const std::map<SeqId, int> new_length = validate(batch);
    std::map<SeqId, std::vector<TokenId>> appended;  // per sequence, in batch order
    for (const BatchToken& t : batch) appended[t.seq].push_back(t.token);
    std::map<SeqId, int> old_length;
    std::map<SeqId, int> tokens_per_sequence;
    for (const auto& [seq, tokens] : appended) {
        old_length[seq] = pool_.sequence_length(seq);
        tokens_per_sequence[seq] = static_cast<int>(tokens.size());
    }
    const auto roll_back = [&] {
        for (const auto& [seq, length] : old_length) pool_.truncate(seq, length);
    };
    const auto n_outputs = std::count_if(batch.begin(), batch.end(), [](const BatchToken& t) { return t.output; });
    logits_.resize(static_cast<size_t>(n_outputs) * static_cast<size_t>(model_->config().n_vocab));

    const auto start = std::chrono::steady_clock::now();
    try {
        for (const auto& [seq, tokens] : appended) {
            // Copied at once, so that a later sequence's failure can roll this one back to
            // blocks that hold what they claim to.
            const std::vector<BlockCopy> copies = pool_.append(seq, tokens);
            if (!copies.empty()) backend_->copy_kv_blocks(copies);
        }
        backend_->forward(batch, pool_, logits_.data());
    } catch (...) {
        roll_back();
        throw;
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    for (const auto& [seq, tokens] : appended) pool_.commit(seq);

    StepEvent event;
    event.step = step_++;
    event.phase = phase.value_or(infer_phase(tokens_per_sequence));
    event.n_tokens = static_cast<int>(batch.size());
    event.n_sequences = static_cast<int>(new_length.size());
    for (const auto& [seq, length] : new_length) event.context_length = std::max(event.context_length, length);
    event.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
    event.kv_bytes_in_use = pool_.bytes_in_use();
    event.kv_bytes_reserved = pool_.bytes_reserved();
    event.gpu_ops = backend_->last_forward_gpu_times();
    for (const OpTime& op : event.gpu_ops) event.gpu_ns += op.gpu_ns;
    for (const auto& [id, observer] : observers_) observer(event);
    return logits_;
}

int InferenceSession::add_step_observer(StepObserver observer) {
    observers_.emplace(next_observer_id_, std::move(observer));
    return next_observer_id_++;
}

void InferenceSession::remove_step_observer(int id) { observers_.erase(id); }

}  // namespace inferscope
