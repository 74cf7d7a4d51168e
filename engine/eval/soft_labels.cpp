#include "engine/eval/soft_labels.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/eval/quality.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"

namespace inferscope {

SoftLabels soft_labels(const Tokenizer& tokenizer, std::span<const float> teacher_logits, double temperature, int top_k,
                       std::span<const float> student_logits) {
    const std::vector<double> p = softmax_at_temperature(teacher_logits, temperature);
    if (top_k < 1 || static_cast<size_t>(top_k) > p.size()) {
        throw InvalidArgument("top-k must be within [1, " + std::to_string(p.size()) + "], got " + std::to_string(top_k));
    }
    std::vector<TokenId> ids(p.size());
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + top_k, ids.end(), [&p](TokenId a, TokenId b) {
        const double pa = p[static_cast<size_t>(a)];
        const double pb = p[static_cast<size_t>(b)];
        return pa != pb ? pa > pb : a < b;
    });
    SoftLabels labels;
    labels.temperature = temperature;
    for (int i = 0; i < top_k; ++i) {
        const TokenId id = ids[static_cast<size_t>(i)];
        labels.top.push_back({id, tokenizer.token_to_piece(id), p[static_cast<size_t>(id)]});
    }
    labels.mass_beyond_argmax = 1.0 - labels.top.front().probability;
    labels.top_to_kth_ratio = labels.top.front().probability / labels.top.back().probability;
    if (student_logits.empty()) return labels;
    labels.kl_teacher_student = kl_divergence(teacher_logits, student_logits, temperature);
    const std::vector<double> student = softmax_at_temperature(student_logits, temperature);
    for (const SoftLabelToken& token : labels.top) labels.student_on_top.push_back(student[static_cast<size_t>(token.id)]);
    return labels;
}

SoftLabels soft_labels_from_top_logprobs(const std::vector<std::pair<std::string, double>>& top_logprobs, double temperature) {
    if (!(temperature > 0.0)) throw InvalidArgument("temperature must be positive, got " + std::to_string(temperature));
    if (top_logprobs.empty()) throw InvalidArgument("no log-probabilities to make soft labels of");
    const double best = top_logprobs.front().second;
    double known_mass = 0, scaled_sum = 0;
    for (const auto& [piece, logprob] : top_logprobs) {
        known_mass += std::exp(logprob);
        scaled_sum += std::exp((logprob - best) / temperature);
    }
    SoftLabels labels;
    labels.temperature = temperature;
    labels.known_mass = known_mass;
    for (size_t i = 0; i < top_logprobs.size(); ++i) {
        const double share = std::exp((top_logprobs[i].second - best) / temperature) / scaled_sum;
        labels.top.push_back({static_cast<TokenId>(i), top_logprobs[i].first, share});
    }
    labels.mass_beyond_argmax = 1.0 - labels.top.front().probability;
    labels.top_to_kth_ratio = labels.top.front().probability / labels.top.back().probability;
    return labels;
}

std::vector<float> next_token_logits(InferenceSession& session, std::span<const TokenId> prompt) {
    if (prompt.empty()) throw InvalidArgument("the prompt is empty: at least one token is needed");
    if (static_cast<int>(prompt.size()) > session.context_size()) {
        throw CapacityError("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                            std::to_string(session.context_size()) + " tokens");
    }
    ScopedSequence seq(session);
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], seq.id(), static_cast<int32_t>(i), i + 1 == prompt.size()});
    const std::span<const float> logits = session.decode(batch, StepPhase::Prefill);
    return {logits.begin(), logits.end()};
}

}  // namespace inferscope
