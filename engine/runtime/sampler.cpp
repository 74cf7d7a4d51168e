#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_set>

#include "engine/core/error.h"

namespace inferscope {

TokenId argmax(std::span<const float> logits) {
    // 16 independent running maxima, each with the first index where it was reached, then
    // the first index among the lanes that hold the largest. One running index would make
    // every element a hard-to-predict branch; independent lanes compile to branch-free selects.
    constexpr size_t kLanes = 16;
    float lane_max[kLanes];
    size_t lane_index[kLanes] = {};
    for (float& m : lane_max) m = -std::numeric_limits<float>::infinity();
    const size_t whole = logits.size() / kLanes * kLanes;
    for (size_t i = 0; i < whole; i += kLanes) {
        for (size_t l = 0; l < kLanes; ++l) {
            const bool above = logits[i + l] > lane_max[l];
            lane_max[l] = above ? logits[i + l] : lane_max[l];
            lane_index[l] = above ? i + l : lane_index[l];
        }
    }
    float best = -std::numeric_limits<float>::infinity();
    size_t best_index = 0;
    const auto consider = [&](float value, size_t index) {
        if (value > best || (value == best && index < best_index)) {
            best = value;
            best_index = index;
        }
    };
    for (size_t l = 0; l < kLanes; ++l) {
        if (lane_max[l] > -std::numeric_limits<float>::infinity()) consider(lane_max[l], lane_index[l]);
    }
    for (size_t i = whole; i < logits.size(); ++i) consider(logits[i], i);
    return static_cast<TokenId>(best_index);
}

std::vector<double> softmax_at_temperature(std::span<const float> logits, double temperature) {
    if (!(temperature > 0.0)) throw InvalidArgument("temperature must be positive, got " + std::to_string(temperature));
    if (logits.empty()) throw InvalidArgument("cannot take the softmax of an empty row");
    const double max_logit = *std::max_element(logits.begin(), logits.end());
    std::vector<double> p(logits.size());
    double sum = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp((static_cast<double>(logits[i]) - max_logit) / temperature);
    for (double& v : p) v /= sum;
    return p;
}

TokenLogprobs token_logprobs(std::span<const float> logits, TokenId token, int top_k) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) {
        throw InvalidArgument("token " + std::to_string(token) + " is outside the row of " + std::to_string(logits.size()) +
                              " logits");
    }
    if (top_k < 0 || static_cast<size_t>(top_k) > logits.size()) {
        throw InvalidArgument("top log-probabilities must be within [0, " + std::to_string(logits.size()) + "], got " +
                              std::to_string(top_k));
    }
    const double max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (const float v : logits) sum += std::exp(static_cast<double>(v) - max_logit);
    const double log_normalizer = max_logit + std::log(sum);
    const auto logprob = [&](TokenId id) { return static_cast<float>(logits[static_cast<size_t>(id)] - log_normalizer); };
    // The k best kept sorted as the row is scanned: k is small (an API allows at most 20).
    const auto ranks_above = [&](TokenId a, TokenId b) {
        const float la = logits[static_cast<size_t>(a)];
        const float lb = logits[static_cast<size_t>(b)];
        return la != lb ? la > lb : a < b;
    };
    std::vector<TokenId> best;
    best.reserve(static_cast<size_t>(top_k) + 1);
    for (TokenId id = 0; top_k > 0 && static_cast<size_t>(id) < logits.size(); ++id) {
        if (best.size() == static_cast<size_t>(top_k) && !ranks_above(id, best.back())) continue;
        best.insert(std::upper_bound(best.begin(), best.end(), id, ranks_above), id);
        if (best.size() > static_cast<size_t>(top_k)) best.pop_back();
    }
    TokenLogprobs out;
    out.logprob = logprob(token);
    for (const TokenId id : best) out.top.emplace_back(id, logprob(id));
    return out;
}

void require_finite_logits(std::span<const float> logits) {
    // x * 0 is 0 for every finite x and NaN for NaN and +-inf: eight independent sums that the
    // compiler turns into vector code, where a search for the first bad value would stay scalar.
    constexpr size_t kLanes = 8;
    float poison[kLanes] = {};
    size_t i = 0;
    for (; i + kLanes <= logits.size(); i += kLanes) {
        for (size_t lane = 0; lane < kLanes; ++lane) poison[lane] += logits[i + lane] * 0.0f;
    }
    for (; i < logits.size(); ++i) poison[0] += logits[i] * 0.0f;
    float total = 0.0f;
    for (float lane : poison) total += lane;
    if (total == 0.0f) return;
    const auto bad = std::find_if(logits.begin(), logits.end(), [](float v) { return !std::isfinite(v); });
    throw Error("the model produced a non-finite logit (" + std::string(std::isnan(*bad) ? "nan" : "inf") +
                ") for token id " + std::to_string(bad - logits.begin()) +
                "; its weights or hyperparameters hold values the arithmetic cannot carry (NaN, Inf or overflow)");
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    if (!std::isfinite(params.temperature)) throw InvalidArgument("temperature must be a finite number (0: greedy)");
    if (params.top_k < 0) throw InvalidArgument("top-k must be >= 0 (0: off), got " + std::to_string(params.top_k));
    if (!(params.repeat_penalty > 0.0f) || !std::isfinite(params.repeat_penalty)) {
        throw InvalidArgument("repeat penalty must be positive and finite (1: off)");
    }
    if (!(params.top_p >= 0.0f && params.top_p <= 1.0f) || !(params.min_p >= 0.0f && params.min_p <= 1.0f)) {
        throw InvalidArgument("top-p and min-p must be within [0, 1]");
    }
}

std::span<const float> Sampler::penalized(std::span<const float> logits, std::span<const TokenId> history) {
    if (params_.repeat_penalty == 1.0f || params_.repeat_last_n == 0) return logits;
    const size_t window = params_.repeat_last_n < 0 ? history.size()
                                                    : std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
    const std::unordered_set<TokenId> seen(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
    penalized_.assign(logits.begin(), logits.end());
    for (TokenId id : seen) {
        if (id < 0 || static_cast<size_t>(id) >= penalized_.size()) continue;
        float& logit = penalized_[static_cast<size_t>(id)];
        // As in CTRL and llama.cpp: shrink positive logits, push negative ones further down.
        logit = logit > 0 ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
    }
    return penalized_;
}

bool Sampler::ranks_above(const Candidate& a, const Candidate& b) { return a.logit != b.logit ? a.logit > b.logit : a.id < b.id; }

// With top-k on, only the k best tokens can survive truncation, so they are picked in one
// pass that keeps them in a heap: no candidate list of the whole vocabulary is built or
// sorted. Ordered by ranks_above, the heap's front is the weakest token kept.
void Sampler::gather_candidates(std::span<const float> scores) {
    const size_t keep = params_.top_k > 0 ? std::min(scores.size(), static_cast<size_t>(params_.top_k)) : scores.size();
    candidates_.resize(keep);
    for (size_t i = 0; i < keep; ++i) candidates_[i] = {static_cast<TokenId>(i), scores[i], 0.0f};
    if (keep == scores.size()) return;
    std::make_heap(candidates_.begin(), candidates_.end(), ranks_above);
    for (size_t i = keep; i < scores.size(); ++i) {
        // A later token ties below every kept one, so only a strictly higher logit enters.
        if (!(scores[i] > candidates_.front().logit)) continue;
        std::pop_heap(candidates_.begin(), candidates_.end(), ranks_above);
        candidates_.back() = {static_cast<TokenId>(i), scores[i], 0.0f};
        std::push_heap(candidates_.begin(), candidates_.end(), ranks_above);
    }
}

// Sorts the candidates (top-k already applied by gather_candidates) and keeps those that
// pass top-p and min-p, with probabilities from the untempered softmax.
void Sampler::truncate(std::vector<Candidate>& candidates) const {
    std::sort(candidates.begin(), candidates.end(), ranks_above);

    const float max_logit = candidates.front().logit;
    double sum = 0.0;
    for (auto& c : candidates) sum += c.p = std::exp(c.logit - max_logit);
    for (auto& c : candidates) c.p = static_cast<float>(c.p / sum);

    if (params_.top_p < 1.0f) {
        double cumulative = 0.0;
        size_t n = 0;
        while (n < candidates.size()) {
            cumulative += candidates[n++].p;
            if (cumulative >= params_.top_p) break;
        }
        candidates.resize(std::max<size_t>(n, 1));
    }
    if (params_.min_p > 0.0f) {
        const float threshold = candidates.front().p * params_.min_p;
        const auto end = std::find_if(candidates.begin() + 1, candidates.end(),
                                      [&](const Candidate& c) { return c.p < threshold; });
        candidates.erase(end, candidates.end());
    }
}

TokenId Sampler::sample(std::span<const float> logits, std::span<const TokenId> history) {
    if (logits.empty()) throw InvalidArgument("cannot sample from an empty distribution");
    require_finite_logits(logits);
    const std::span<const float> scores = penalized(logits, history);
    if (params_.temperature <= 0.0f) return argmax(scores);
    gather_candidates(scores);
    truncate(candidates_);

    const float max_logit = candidates_.front().logit;
    std::vector<double> weights(candidates_.size());
    for (size_t i = 0; i < candidates_.size(); ++i) {
        weights[i] = std::exp(static_cast<double>(candidates_[i].logit - max_logit) / params_.temperature);
    }
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    return candidates_[pick(rng_)].id;
}

}  // namespace inferscope
