#include "engine/speculative/speculative.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <string_view>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

constexpr int kPrefillBatch = 512;  // prompt tokens per forward pass
constexpr std::string_view kSpeculativeStage = "speculative decoding";

TokenId draw(std::span<const double> weights, std::mt19937_64& rng) {
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    return static_cast<TokenId>(pick(rng));
}

// Feeds `tokens` to the end of the sequence in passes of at most kPrefillBatch tokens;
// returns the logits of the last token [n_vocab].
std::span<const float> feed(InferenceSession& session, SeqId seq, std::span<const TokenId> tokens, StepPhase phase) {
    std::span<const float> logits;
    Batch batch;
    for (size_t start = 0; start < tokens.size(); start += kPrefillBatch) {
        const size_t end = std::min(tokens.size(), start + kPrefillBatch);
        batch.clear();
        const int first_pos = session.sequence_length(seq);
        for (size_t i = start; i < end; ++i) {
            batch.push_back({tokens[i], seq, first_pos + static_cast<int32_t>(i - start), i + 1 == tokens.size()});
        }
        logits = session.decode(batch, phase);
    }
    return logits;
}

void check_options(const SpeculativeOptions& o) {
    if (o.gamma < 1) throw InvalidArgument("gamma (draft tokens per verify) must be at least 1, got " + std::to_string(o.gamma));
    if (o.n_predict < 0) throw InvalidArgument("the number of tokens to generate must be >= 0");
    if (!std::isfinite(o.temperature)) throw InvalidArgument("temperature must be a finite number");
}

// The state of one speculative generation. Invariant between rounds: `tokens_` is the
// prompt plus everything emitted; the target's sequence holds all of it but the last token,
// the draft's holds a prefix of it (one token shorter still after a round that accepted
// every proposal, since the draft never fed its own last proposal).
class SpeculativeRun {
public:
    SpeculativeRun(InferenceSession& target, InferenceSession& draft, std::span<const TokenId> prompt,
                   const SpeculativeOptions& options)
        : target_(target), draft_(draft), options_(options), target_seq_(target), draft_seq_(draft),
          tokens_(prompt.begin(), prompt.end()), rng_(options.seed),
          n_vocab_(static_cast<size_t>(target.model().config().n_vocab)),
          context_(std::min(target.context_size(), draft.context_size())) {
        result_.stop_reason = "length";
        result_.stats.n_prompt = static_cast<int>(prompt.size());
    }

    SpeculativeResult run() {
        const auto start = Clock::now();
        const auto known = std::span<const TokenId>(tokens_).first(tokens_.size() - 1);
        feed(target_, target_seq_.id(), known, StepPhase::Prefill);
        feed(draft_, draft_seq_.id(), known, StepPhase::Prefill);
        result_.stats.prefill_ms = ms_since(start);
        bool more = options_.n_predict > 0;
        while (more) {
            // Near the end of the context the target can verify fewer positions.
            propose(std::min(options_.gamma, context_ - static_cast<int>(tokens_.size())));
            more = commit(verify());
            if (!more) break;
            options_.progress.report(kSpeculativeStage, static_cast<int64_t>(result_.generated.size()), options_.n_predict);
            if (options_.progress.cancelled()) {
                result_.stop_reason = "cancelled";
                more = false;
            }
        }
        result_.stats.total_ms = ms_since(start);
        result_.stats.n_generated = static_cast<int>(result_.generated.size());
        return std::move(result_);
    }

private:
    bool greedy() const { return options_.temperature <= 0.0f; }

    // The draft catches up on the tokens it has not seen, then proposes `gamma` tokens,
    // feeding each but the last back to itself. Fills proposals_ and (sampling) draft_probs_.
    void propose(int gamma) {
        proposals_.clear();
        draft_probs_.clear();
        if (gamma <= 0) return;
        const auto start = Clock::now();
        const auto seen = static_cast<size_t>(draft_.sequence_length(draft_seq_.id()));
        std::span<const float> logits =
            feed(draft_, draft_seq_.id(), std::span<const TokenId>(tokens_).subspan(seen), StepPhase::Decode);
        ++result_.stats.draft_steps;
        for (int i = 0; i < gamma; ++i) {
            if (greedy()) {
                proposals_.push_back(argmax(logits));
            } else {
                const std::vector<double> q = softmax_at_temperature(logits, options_.temperature);
                proposals_.push_back(draw(q, rng_));
                draft_probs_.insert(draft_probs_.end(), q.begin(), q.end());
            }
            if (i + 1 == gamma) break;
            const TokenId proposal = proposals_.back();
            logits = feed(draft_, draft_seq_.id(), std::span<const TokenId>(&proposal, 1), StepPhase::Decode);
            ++result_.stats.draft_steps;
        }
        result_.stats.draft_ms += ms_since(start);
    }

    // One target pass over [last token, proposals...] with logits at every position.
    VerifyOutcome verify() {
        const auto start = Clock::now();
        const int first_pos = target_.sequence_length(target_seq_.id());
        Batch batch = {{tokens_.back(), target_seq_.id(), first_pos, true}};
        for (size_t i = 0; i < proposals_.size(); ++i) {
            batch.push_back({proposals_[i], target_seq_.id(), first_pos + 1 + static_cast<int32_t>(i), true});
        }
        const std::span<const float> logits = target_.decode(batch, StepPhase::Decode);
        VerifyOutcome outcome;
        if (greedy()) {
            outcome = verify_greedy(logits, proposals_);
        } else {
            std::vector<double> p;  // [(proposals + 1) x n_vocab]
            p.reserve(batch.size() * n_vocab_);
            for (size_t row = 0; row < batch.size(); ++row) {
                const std::vector<double> p_row = softmax_at_temperature(logits.subspan(row * n_vocab_, n_vocab_), options_.temperature);
                p.insert(p.end(), p_row.begin(), p_row.end());
            }
            outcome = verify_sampled(p, draft_probs_, proposals_, rng_);
        }
        result_.stats.verify_ms += ms_since(start);
        ++result_.stats.verify_passes;
        result_.stats.proposed += static_cast<int>(proposals_.size());
        result_.stats.accepted += outcome.accepted;
        result_.stats.emitted += outcome.accepted + 1;
        return outcome;
    }

    // Removes the rejected proposals' K/V from both caches and emits the kept tokens.
    // Returns false when generation stops.
    bool commit(const VerifyOutcome& outcome) {
        const int kept = static_cast<int>(tokens_.size()) + outcome.accepted;
        target_.truncate_sequence(target_seq_.id(), kept);
        draft_.truncate_sequence(draft_seq_.id(), std::min(kept, draft_.sequence_length(draft_seq_.id())));
        for (int i = 0; i < outcome.accepted; ++i) {
            if (!emit(proposals_[static_cast<size_t>(i)])) return false;
        }
        return emit(outcome.next);
    }

    // The stop checks in generate()'s order.
    bool emit(TokenId token) {
        tokens_.push_back(token);
        result_.generated.push_back(token);
        if (static_cast<int>(tokens_.size()) > context_) {
            result_.stop_reason = "context full";
            return false;
        }
        if (options_.stop_at_end_of_generation && target_.model().tokenizer().is_end_of_generation(token)) {
            result_.stop_reason = "end of generation";
            return false;
        }
        return static_cast<int>(result_.generated.size()) < options_.n_predict;
    }

    InferenceSession& target_;
    InferenceSession& draft_;
    const SpeculativeOptions& options_;
    ScopedSequence target_seq_;
    ScopedSequence draft_seq_;
    std::vector<TokenId> tokens_;
    std::vector<TokenId> proposals_;
    std::vector<double> draft_probs_;  // [proposals x n_vocab], sampling only
    std::mt19937_64 rng_;
    size_t n_vocab_;
    int context_;
    SpeculativeResult result_;
};

size_t rows_of(size_t values, size_t expected_rows, const char* what) {
    if (expected_rows == 0 || values == 0 || values % expected_rows != 0) {
        throw InvalidArgument(std::string(what) + ": " + std::to_string(values) + " values do not form " +
                              std::to_string(expected_rows) + " equal rows");
    }
    return values / expected_rows;
}

}  // namespace

void check_same_vocabulary(const Model& a, const Model& b) {
    const int a_vocab = a.config().n_vocab;
    const int b_vocab = b.config().n_vocab;
    if (a_vocab != b_vocab) {
        throw InvalidArgument("the models have different vocabularies (" + std::to_string(a_vocab) + " vs " +
                              std::to_string(b_vocab) + " tokens); a draft or student must share the target's");
    }
    const Tokenizer& ta = a.tokenizer();
    const Tokenizer& tb = b.tokenizer();
    if (ta.vocab_size() != tb.vocab_size()) {
        throw InvalidArgument("the models' tokenizers have different vocabularies (" + std::to_string(ta.vocab_size()) +
                              " vs " + std::to_string(tb.vocab_size()) + " tokens)");
    }
    for (TokenId id = 0; id < ta.vocab_size(); ++id) {
        if (ta.token_text(id) != tb.token_text(id)) {
            throw InvalidArgument("the models' vocabularies differ at token " + std::to_string(id) + " ('" +
                                  ta.token_text(id) + "' vs '" + tb.token_text(id) + "')");
        }
    }
}

void check_speculative_options(const SpeculativeOptions& options) { check_options(options); }

SpeculativeResult speculative_generate(InferenceSession& target, InferenceSession& draft,
                                       std::span<const TokenId> prompt, const SpeculativeOptions& options) {
    check_options(options);
    check_same_vocabulary(target.model(), draft.model());
    if (prompt.empty()) throw InvalidArgument("the prompt is empty: at least one token is needed");
    const int context = std::min(target.context_size(), draft.context_size());
    if (static_cast<int>(prompt.size()) > context) {
        throw CapacityError("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                            std::to_string(context) + " tokens (raise -c or shorten the prompt)");
    }
    return SpeculativeRun(target, draft, prompt, options).run();
}

VerifyOutcome verify_greedy(std::span<const float> target_logits, std::span<const TokenId> draft) {
    const size_t n_vocab = rows_of(target_logits.size(), draft.size() + 1, "target logits");
    for (size_t i = 0; i < draft.size(); ++i) {
        const TokenId choice = argmax(target_logits.subspan(i * n_vocab, n_vocab));
        if (choice != draft[i]) return {static_cast<int>(i), choice};
    }
    return {static_cast<int>(draft.size()), argmax(target_logits.subspan(draft.size() * n_vocab, n_vocab))};
}

VerifyOutcome verify_sampled(std::span<const double> target_probs, std::span<const double> draft_probs,
                             std::span<const TokenId> draft, std::mt19937_64& rng) {
    const size_t n_vocab = rows_of(target_probs.size(), draft.size() + 1, "target probabilities");
    if (draft_probs.size() != draft.size() * n_vocab) {
        throw InvalidArgument("draft probabilities: expected " + std::to_string(draft.size()) + " rows of " +
                              std::to_string(n_vocab) + ", got " + std::to_string(draft_probs.size()) + " values");
    }
    std::uniform_real_distribution<double> uniform(0.0, 1.0);
    std::vector<double> residual(n_vocab);
    for (size_t i = 0; i < draft.size(); ++i) {
        const std::span<const double> p = target_probs.subspan(i * n_vocab, n_vocab);
        const std::span<const double> q = draft_probs.subspan(i * n_vocab, n_vocab);
        const auto x = static_cast<size_t>(draft[i]);
        if (x >= n_vocab) throw InvalidArgument("draft token " + std::to_string(draft[i]) + " is outside the vocabulary");
        // Accept with probability min(1, p(x) / q(x)), written without dividing by q(x).
        if (uniform(rng) * q[x] < p[x]) continue;
        double mass = 0.0;
        for (size_t j = 0; j < n_vocab; ++j) mass += residual[j] = std::max(0.0, p[j] - q[j]);
        // A rejection implies p(x) < q(x), hence mass > 0; rounding aside, p itself is the limit.
        const TokenId next = mass > 0.0 ? draw(residual, rng) : draw(p, rng);
        return {static_cast<int>(i), next};
    }
    return {static_cast<int>(draft.size()), draw(target_probs.subspan(draft.size() * n_vocab, n_vocab), rng)};
}

}  // namespace inferscope
