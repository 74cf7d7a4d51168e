#pragma once
// Distillation's soft labels: a teacher's whole next-token distribution, not only its
// argmax, at a temperature T (logits divided by T before the softmax, which flattens it).
// Since p_i / p_j = exp((z_i - z_j) / T), any probability ratio at T = 2 is the square
// root of the same ratio at T = 1.
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;

struct SoftLabelToken {
    TokenId id = 0;
    std::string text;  // the token's piece
    double probability = 0;
};

struct SoftLabels {
    double temperature = 1;
    std::vector<SoftLabelToken> top;  // the k most probable, descending (ties: lower id first)
    double mass_beyond_argmax = 0;    // 1 - p(argmax): what a hard label throws away
    double top_to_kth_ratio = 0;      // p(top[0]) / p(top[k-1])
    std::optional<double> kl_teacher_student;  // KL(teacher_T || student_T), nats, when a student is given
    // The student's probability (at the same T) of each token in `top`, so both distributions
    // can be read on the teacher's tokens; empty without a student.
    std::vector<double> student_on_top;
    // From a server's top k (soft_labels_from_top_logprobs): how much of the whole distribution
    // at T = 1 the k tokens hold; `top` then holds each token's share of the k.
    std::optional<double> known_mass;
};

// The distribution after one row of teacher logits [n_vocab] at `temperature`; with
// `student_logits` (same length) also the KL divergence at the same temperature.
// InvalidArgument unless temperature > 0, 1 <= top_k <= n_vocab and the rows match.
SoftLabels soft_labels(const Tokenizer& tokenizer, std::span<const float> teacher_logits, double temperature, int top_k,
                       std::span<const float> student_logits = {});

// Soft labels from a server's top-k log-probabilities (at T = 1, descending; the rest of the
// vocabulary unseen, ids unknown: `id` is the rank - 1). At temperature T each token gets its
// share of the k, exp(lp_i / T) / sum_j exp(lp_j / T) (mass_beyond_argmax too is within the k):
// the ratios between them are exact at any T, absolute probabilities are not. InvalidArgument unless temperature > 0 and the list
// is not empty.
SoftLabels soft_labels_from_top_logprobs(const std::vector<std::pair<std::string, double>>& top_logprobs, double temperature);

// The logits [n_vocab] for the token after `prompt`, from one prefill in a fresh sequence
// (freed afterwards). InvalidArgument for an empty prompt, CapacityError when it does not fit.
std::vector<float> next_token_logits(InferenceSession& session, std::span<const TokenId> prompt);

}  // namespace inferscope
