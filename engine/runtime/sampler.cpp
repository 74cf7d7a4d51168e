#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <unordered_set>

#include "engine/core/error.h"

namespace inferscope {

TokenId argmax(std::span<const float> logits) {
    TokenId best = 0;
    for (size_t i = 1; i < logits.size(); ++i) {
        if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<TokenId>(i);
    }
    return best;
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

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) {
    if (!(params.repeat_penalty > 0.0f)) throw InvalidArgument("repeat penalty must be positive");
    if (params.top_p < 0.0f || params.min_p < 0.0f || params.min_p > 1.0f) {
        throw InvalidArgument("top-p must be >= 0 and min-p within [0, 1]");
    }
}

void Sampler::apply_repetition_penalty(std::vector<Candidate>& candidates, std::span<const TokenId> history) const {
    if (params_.repeat_penalty == 1.0f || params_.repeat_last_n == 0) return;
    const size_t window = params_.repeat_last_n < 0 ? history.size()
                                                    : std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
    const std::unordered_set<TokenId> seen(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
    for (TokenId id : seen) {
        if (id < 0 || static_cast<size_t>(id) >= candidates.size()) continue;
        float& logit = candidates[static_cast<size_t>(id)].logit;
        // As in CTRL and llama.cpp: shrink positive logits, push negative ones further down.
        logit = logit > 0 ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
    }
}

// Sorts candidates by logit and keeps those that pass top-k, top-p and min-p, with
// probabilities from the untempered softmax.
void Sampler::truncate(std::vector<Candidate>& candidates) const {
    const auto by_logit = [](const Candidate& a, const Candidate& b) {
        return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
    };
    size_t keep = candidates.size();
    if (params_.top_k > 0) keep = std::min(keep, static_cast<size_t>(params_.top_k));
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep), candidates.end(), by_logit);
    candidates.resize(keep);

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
    candidates_.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {static_cast<TokenId>(i), logits[i], 0.0f};
    apply_repetition_penalty(candidates_, history);

    if (params_.temperature <= 0.0f) {
        const auto best = std::min_element(candidates_.begin(), candidates_.end(), [](const Candidate& a, const Candidate& b) {
            return a.logit != b.logit ? a.logit > b.logit : a.id < b.id;
        });
        return best->id;
    }
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
