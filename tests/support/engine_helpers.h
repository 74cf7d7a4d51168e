#pragma once
// Small drivers of the engine shared by test suites.
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "engine/backend/batch.h"
#include "engine/model/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"

namespace inferscope::testing {

// `count` consecutive token ids from `first`: distinct prompts for the KV suites.
inline std::vector<TokenId> consecutive_tokens(int count, TokenId first = 100) {
    std::vector<TokenId> ids(static_cast<size_t>(count));
    std::iota(ids.begin(), ids.end(), first);
    return ids;
}

inline SessionOptions test_session_options(KvDtype kv = KvDtype::F32, int n_ctx = 0, int threads = 2) {
    SessionOptions o;
    o.kv_dtype = kv;
    o.n_ctx = n_ctx;
    o.n_threads = threads;
    return o;
}

// Logits at every position of `tokens`, all fed in one batch (teacher forcing).
inline std::vector<std::vector<float>> teacher_forced_logits(InferenceSession& session, std::span<const TokenId> tokens) {
    const SeqId seq = session.new_sequence();
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], seq, static_cast<int32_t>(i), true});
    const std::span<const float> flat = session.decode(batch);
    session.free_sequence(seq);
    const auto n_vocab = static_cast<size_t>(session.model().config().n_vocab);
    std::vector<std::vector<float>> rows;
    for (size_t i = 0; i < tokens.size(); ++i) rows.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(i * n_vocab),
                                                                 flat.begin() + static_cast<std::ptrdiff_t>((i + 1) * n_vocab));
    return rows;
}

// Greedy continuation with the KV cache: prefill, then one token per step. Also returns
// the logits each new token was chosen from.
struct GreedyRun {
    std::vector<TokenId> ids;
    std::vector<std::vector<float>> logits;
};

inline GreedyRun greedy_with_cache(InferenceSession& session, std::span<const TokenId> prompt, int n_new) {
    GreedyRun run;
    const SeqId seq = session.new_sequence();
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], seq, static_cast<int32_t>(i), i + 1 == prompt.size()});
    std::span<const float> logits = session.decode(batch);
    for (int step = 0; step < n_new; ++step) {
        run.logits.emplace_back(logits.begin(), logits.end());
        run.ids.push_back(argmax(logits));
        if (step + 1 == n_new) break;
        const Batch next = {{run.ids.back(), seq, session.sequence_length(seq), true}};
        logits = session.decode(next);
    }
    session.free_sequence(seq);
    return run;
}

// Greedy continuation without a cache: the whole sequence is recomputed for every token.
inline GreedyRun greedy_without_cache(InferenceSession& session, std::span<const TokenId> prompt, int n_new) {
    GreedyRun run;
    std::vector<TokenId> sequence(prompt.begin(), prompt.end());
    for (int step = 0; step < n_new; ++step) {
        const SeqId seq = session.new_sequence();
        Batch batch;
        for (size_t i = 0; i < sequence.size(); ++i) {
            batch.push_back({sequence[i], seq, static_cast<int32_t>(i), i + 1 == sequence.size()});
        }
        const std::span<const float> logits = session.decode(batch);
        run.logits.emplace_back(logits.begin(), logits.end());
        run.ids.push_back(argmax(logits));
        sequence.push_back(run.ids.back());
        session.free_sequence(seq);
    }
    return run;
}

inline float max_abs(const std::vector<float>& v) {
    float m = 0;
    for (float x : v) m = std::max(m, std::abs(x));
    return m;
}

// max |a - b| / max(|b|) over the row: the error relative to the row's scale.
inline double relative_row_error(const std::vector<float>& a, const std::vector<float>& b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst / std::max(1e-30, static_cast<double>(max_abs(b)));
}

}  // namespace inferscope::testing
