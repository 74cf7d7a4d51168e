#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/sampler.h"

namespace inferscope {
namespace {

SamplingParams greedy() {
    SamplingParams p;
    p.temperature = 0;
    return p;
}

// Sampling at `temperature` with top-k, top-p and min-p off.
SamplingParams untruncated(float temperature) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

TEST(Sampler, GreedyTakesTheArgmaxAndTheLowestIdOnTies) {
    Sampler s(greedy());
    const std::vector<float> logits = {0.1f, 3.0f, -2.0f, 3.0f};
    EXPECT_EQ(s.sample(logits, {}), 1);
    EXPECT_EQ(argmax(logits), 1);
}

TEST(Sampler, ArgmaxOfLongRowsIsTheFirstLargest) {
    std::mt19937 rng(7);
    for (size_t n : {1u, 15u, 16u, 17u, 1000u, 151936u}) {
        std::vector<float> row(n);
        for (float& x : row) x = static_cast<float>(rng() % 50);  // many ties
        size_t expected = 0;
        for (size_t i = 1; i < n; ++i) {
            if (row[i] > row[expected]) expected = i;
        }
        EXPECT_EQ(argmax(row), static_cast<TokenId>(expected)) << "n = " << n;
    }
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(argmax(std::vector<float>{-inf, -inf, -inf}), 0);
    EXPECT_EQ(argmax(std::vector<float>{-inf, -1.0f, inf, inf}), 2);
    EXPECT_EQ(argmax(std::vector<float>{std::nanf(""), 1.0f, 2.0f}), 2);  // a NaN never wins
}

TEST(Sampler, TopKKeepsTheKHighestAndTheLowestIdsAmongEquals) {
    SamplingParams p = untruncated(1.0f);
    p.top_k = 5;
    // 40 tokens of logits 0, 1, 2, 3 in turn: the five best are the first five tokens of logit
    // 3 (ids 3, 7, 11, 15, 19); every later token of logit 3 ties with them and loses on its id.
    std::vector<float> logits(40);
    for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 4);
    Sampler s(p);
    std::map<TokenId, int> seen;
    for (int i = 0; i < 2000; ++i) ++seen[s.sample(logits, {})];
    EXPECT_EQ(seen.size(), 5u);
    for (TokenId id : {3, 7, 11, 15, 19}) EXPECT_GT(seen[id], 300) << "token " << id;
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeLogits) {
    SamplingParams p = greedy();
    p.repeat_penalty = 2.0f;
    Sampler s(p);
    // token 0 (4.0) was seen: 4.0 / 2 = 2.0 < 3.0 -> token 1 wins
    EXPECT_EQ(s.sample(std::vector<float>{4.0f, 3.0f, -1.0f}, std::vector<TokenId>{0}), 1);
    // a negative logit is pushed further down: -1 * 2 = -2 < -1.5
    EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -1.5f}, std::vector<TokenId>{0}), 1);
    // only the last repeat_last_n tokens count
    p.repeat_last_n = 1;
    Sampler window(p);
    EXPECT_EQ(window.sample(std::vector<float>{4.0f, 3.0f}, std::vector<TokenId>{0, 1}), 0);
}

TEST(Sampler, TopKOfOneIsGreedyAtAnyTemperature) {
    SamplingParams p;
    p.temperature = 5.0f;
    p.top_k = 1;
    Sampler s(p);
    const std::vector<float> logits = {0.0f, 0.5f, 0.4f};
    for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits, {}), 1);
}

TEST(Sampler, MinPAndTopPCutTheTail) {
    SamplingParams p = untruncated(1.0f);
    p.min_p = 0.5f;  // keeps tokens with p >= 0.5 * p_max
    Sampler s(p);
    const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
    std::map<TokenId, int> seen;
    for (int i = 0; i < 400; ++i) ++seen[s.sample(logits, {})];
    EXPECT_GT(seen[0], 0);
    EXPECT_GT(seen[1], 0);
    EXPECT_EQ(seen.count(2), 0u);

    p.min_p = 0;
    p.top_p = 0.5f;  // 0.5 alone reaches the mass
    Sampler nucleus(p);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(nucleus.sample(logits, {}), 0);
}

TEST(Sampler, SameSeedSameTokensAndFrequenciesFollowTheSoftmax) {
    SamplingParams p = untruncated(1.0f);
    p.seed = 1234;
    const std::vector<float> logits = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
    Sampler a(p), b(p);
    std::vector<int> counts(3);
    constexpr int kDraws = 20000;
    for (int i = 0; i < kDraws; ++i) {
        const TokenId x = a.sample(logits, {});
        EXPECT_EQ(x, b.sample(logits, {}));
        ++counts[static_cast<size_t>(x)];
    }
    // within 5 standard deviations of the binomial counts
    const double expected[] = {0.6, 0.3, 0.1};
    for (int i = 0; i < 3; ++i) {
        const double mean = kDraws * expected[i];
        EXPECT_NEAR(counts[static_cast<size_t>(i)], mean, 5 * std::sqrt(mean * (1 - expected[i])));
    }
}

TEST(Sampler, TemperatureFlattensTheDistribution) {
    SamplingParams p;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    const std::vector<float> logits = {2.0f, 0.0f};
    auto share_of_top = [&](float temperature) {
        p.temperature = temperature;
        Sampler s(p);
        int top = 0;
        for (int i = 0; i < 4000; ++i) top += s.sample(logits, {}) == 0;
        return top / 4000.0;
    };
    // p(top) = 1 / (1 + e^(-2/T)): 0.881 at T = 1, 0.731 at T = 2
    EXPECT_NEAR(share_of_top(1.0f), 0.881, 0.03);
    EXPECT_NEAR(share_of_top(2.0f), 0.731, 0.03);
}

TEST(Sampler, InvalidParametersAreRejected) {
    SamplingParams p;
    p.repeat_penalty = 0;
    EXPECT_THROW(Sampler{p}, InvalidArgument);
    p = SamplingParams{};
    p.min_p = 2;
    EXPECT_THROW(Sampler{p}, InvalidArgument);
    Sampler ok{SamplingParams{}};
    EXPECT_THROW(ok.sample(std::vector<float>{}, {}), InvalidArgument);
    const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
    for (float bad : {nan, inf}) {
        p = SamplingParams{};
        p.temperature = bad;
        EXPECT_THROW(Sampler{p}, InvalidArgument) << bad;
        p = SamplingParams{};
        p.top_p = bad;
        EXPECT_THROW(Sampler{p}, InvalidArgument) << bad;
        p = SamplingParams{};
        p.repeat_penalty = bad;
        EXPECT_THROW(Sampler{p}, InvalidArgument) << bad;
    }
    p = SamplingParams{};
    p.top_k = -5;
    EXPECT_THROW(Sampler{p}, InvalidArgument);
}

TEST(Sampler, NonFiniteLogitsStopWithTheTokenNamed) {
    for (const SamplingParams& p : {greedy(), untruncated(0.8f)}) {
        Sampler s(p);
        std::vector<float> logits = {0.5f, 1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
        try {
            s.sample(logits, {});
            FAIL() << "a NaN logit was sampled from";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("non-finite logit (nan) for token id 2"), std::string::npos) << e.what();
        }
        logits[2] = -std::numeric_limits<float>::infinity();
        EXPECT_THROW(s.sample(logits, {}), Error);
    }
}

TEST(TokenLogprobs, AreTheLogSoftmaxOfTheRawRowWithTheTopKDescending) {
    const std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
    double sum = 0;
    for (const float v : logits) sum += std::exp(static_cast<double>(v));
    const TokenLogprobs lp = token_logprobs(logits, 4, 3);
    EXPECT_NEAR(lp.logprob, 0.5 - std::log(sum), 1e-6);
    ASSERT_EQ(lp.top.size(), 3u);
    EXPECT_EQ(lp.top[0].first, 1);  // tied with 3: the lower id first
    EXPECT_EQ(lp.top[1].first, 3);
    EXPECT_EQ(lp.top[2].first, 0);
    EXPECT_NEAR(lp.top[2].second, 1.0 - std::log(sum), 1e-6);
    EXPECT_TRUE(token_logprobs(logits, 2, 0).top.empty());
    EXPECT_EQ(token_logprobs(logits, 2, 5).top.back().first, 2);
    EXPECT_THROW(token_logprobs(logits, 5, 1), InvalidArgument);
    EXPECT_THROW(token_logprobs(logits, 0, 6), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
