// Tests of the naive reference forward pass (tests/model/naive_forward.*) against llama.cpp's
// outputs in ../shared/models/reference/*.json (schema llamacpp-logits-ref/1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <iostream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>

#include "engine/core/fp16.h"
#include "engine/gguf/gguf_file.h"
#include "model/naive_forward.h"
#include "support/test_paths.h"

namespace inferscope::reference {
namespace {

using nlohmann::json;

json read_json(const std::string& relative) {
    std::ifstream in(::inferscope::testing::shared_model(relative));
    if (!in) throw std::runtime_error("cannot open " + relative);
    return json::parse(in);
}

// Loaded once per process: qwen2-tiny's embedding alone is 50257 x 128 doubles.
const NaiveModel& cached_model(const std::string& relative) {
    static std::map<std::string, NaiveModel> cache;
    auto it = cache.find(relative);
    if (it == cache.end()) {
        const GgufFile file = GgufFile::open(::inferscope::testing::shared_model(relative).string());
        it = cache.emplace(relative, load_naive_model(file)).first;
    }
    return it->second;
}

// The k largest ids, by value descending, ties by lower id (the reference's order).
std::vector<int32_t> top_k_ids(const std::vector<double>& logits, size_t k) {
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    k = std::min(k, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    ids.resize(k);
    return ids;
}

// llama.cpp computes in float32, so its logits carry relative errors of about 1e-7..1e-6
// (a few ulps); the sums over the vocabulary inherit that: stories260K's logits are ~10x
// larger than qwen2-tiny's, and its sums differ by ~1.5e-3 (relative ~1e-6).
struct Tolerances {
    double logit;      // absolute, on every reported top-k logit
    double sum;        // absolute, on logit_sum
    double sumsq_rel;  // relative, on logit_sumsq
};

// Checks top-k ids (exact order), top-k logits, and the per-position sums against `ref`;
// returns the largest absolute difference of a reported logit.
double expect_teacher_forced_match(const NaiveModel& model, const json& ref, const Tolerances& tol) {
    const auto prompt = ref.at("prompt_ids").get<std::vector<int32_t>>();
    const auto logits = naive_logits(model, prompt);
    const auto& positions = ref.at("teacher_forced");
    EXPECT_EQ(logits.size(), positions.size());
    EXPECT_EQ(static_cast<int>(model.config.n_vocab), ref.at("n_vocab").get<int>());
    double max_diff = 0.0, max_sum_diff = 0.0, max_sumsq_rel = 0.0;
    for (size_t pos = 0; pos < std::min(logits.size(), positions.size()); ++pos) {
        const auto& entry = positions[pos];
        const auto& top = entry.at("top");
        const auto mine = top_k_ids(logits[pos], top.size());
        for (size_t r = 0; r < top.size(); ++r) {
            const auto id = top[r][0].get<int32_t>();
            const double expected = top[r][1].get<double>();
            EXPECT_EQ(mine[r], id) << "position " << pos << " rank " << r;
            const double diff = std::abs(logits[pos][static_cast<size_t>(id)] - expected);
            EXPECT_LE(diff, tol.logit) << "position " << pos << " id " << id;
            max_diff = std::max(max_diff, diff);
        }
        double sum = 0.0, sumsq = 0.0;
        for (double v : logits[pos]) {
            sum += v;
            sumsq += v * v;
        }
        const double sum_diff = std::abs(sum - entry.at("logit_sum").get<double>());
        const double ref_sumsq = entry.at("logit_sumsq").get<double>();
        const double sumsq_rel = std::abs(sumsq - ref_sumsq) / ref_sumsq;
        EXPECT_LE(sum_diff, tol.sum) << "position " << pos;
        EXPECT_LE(sumsq_rel, tol.sumsq_rel) << "position " << pos;
        max_sum_diff = std::max(max_sum_diff, sum_diff);
        max_sumsq_rel = std::max(max_sumsq_rel, sumsq_rel);
    }
    std::cout << "[ measured ] " << ref.at("model").get<std::string>() << ": max |logit diff| " << max_diff
              << ", max |sum diff| " << max_sum_diff << ", max rel sumsq diff " << max_sumsq_rel << "\n";
    return max_diff;
}

TEST(NaiveForward, Stories260KConfig) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const NaiveModel& m = cached_model("stories260K.gguf");
    const NaiveConfig& c = m.config;
    EXPECT_EQ(c.arch, "llama");
    EXPECT_EQ(c.rope_style, NaiveRopeStyle::Normal);
    EXPECT_EQ(c.n_layer, 5);
    EXPECT_EQ(c.n_embd, 64);
    EXPECT_EQ(c.n_head, 8);
    EXPECT_EQ(c.n_head_kv, 4);
    EXPECT_EQ(c.head_dim, 8);
    EXPECT_EQ(c.rope_dim, 8);
    EXPECT_EQ(c.n_ff, 172);
    EXPECT_EQ(c.n_vocab, 512);
    EXPECT_EQ(c.n_ctx, 512);
    EXPECT_DOUBLE_EQ(c.rope_base, 10000.0);  // no rope.freq_base key: the default
    EXPECT_NEAR(c.rms_eps, 1e-5, 1e-12);
    ASSERT_FALSE(m.output.empty());  // present in the file (a copy of token_embd)
    EXPECT_EQ(m.output, m.token_embd);
    EXPECT_TRUE(m.layers[0].bq.empty());
}

TEST(NaiveForward, Stories260KTeacherForcedMatchesLlamaCpp) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("reference/stories260K.json");
    const json ref = read_json("reference/stories260K.json");
    const double max_diff =
        expect_teacher_forced_match(cached_model("stories260K.gguf"), ref, {1e-4, 1e-2, 1e-5});
    EXPECT_LT(max_diff, 1e-4);
}

TEST(NaiveForward, Stories260KGreedyMatchesLlamaCpp) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("reference/stories260K.json");
    const json ref = read_json("reference/stories260K.json");
    const auto prompt = ref.at("prompt_ids").get<std::vector<int32_t>>();
    const auto expected = ref.at("greedy").at("ids").get<std::vector<int32_t>>();
    ASSERT_EQ(expected.size(), 64u);
    const auto ids = naive_greedy(cached_model("stories260K.gguf"), prompt, static_cast<int>(expected.size()));
    EXPECT_EQ(ids, expected);
}

TEST(NaiveForward, PrefixLogitsDoNotDependOnLaterTokens) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const NaiveModel& m = cached_model("stories260K.gguf");
    const std::vector<int32_t> full = {1, 403, 407, 261, 378, 11, 99};
    const std::vector<int32_t> prefix(full.begin(), full.begin() + 4);
    const auto a = naive_logits(m, full);
    const auto b = naive_logits(m, prefix);
    ASSERT_EQ(a.size(), full.size());
    ASSERT_EQ(b.size(), prefix.size());
    for (size_t t = 0; t < prefix.size(); ++t) EXPECT_EQ(a[t], b[t]) << "position " << t;
    // Greedy's first token is the argmax of the last teacher-forced position.
    EXPECT_EQ(naive_greedy(m, full, 1).at(0), naive_argmax(a.back()));
}

TEST(NaiveForward, RejectsOutOfRangeTokens) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const NaiveModel& m = cached_model("stories260K.gguf");
    EXPECT_THROW(naive_logits(m, {1, 512}), std::runtime_error);
    EXPECT_THROW(naive_logits(m, {-1}), std::runtime_error);
    EXPECT_THROW(naive_greedy(m, {}, 1), std::runtime_error);
}

TEST(NaiveForward, Qwen2TinyConfig) {
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny.gguf");
    const NaiveModel& m = cached_model("qwen2-tiny.gguf");
    const NaiveConfig& c = m.config;
    EXPECT_EQ(c.arch, "qwen2");
    EXPECT_EQ(c.rope_style, NaiveRopeStyle::Neox);
    EXPECT_EQ(c.n_layer, 4);
    EXPECT_EQ(c.n_embd, 128);
    EXPECT_EQ(c.n_head, 4);
    EXPECT_EQ(c.n_head_kv, 2);
    EXPECT_EQ(c.head_dim, 32);
    EXPECT_EQ(c.rope_dim, 32);
    EXPECT_EQ(c.n_ff, 352);
    EXPECT_EQ(c.n_vocab, 50257);
    EXPECT_DOUBLE_EQ(c.rope_base, 1e6);
    EXPECT_NEAR(c.rms_eps, 1e-6, 1e-13);
    EXPECT_TRUE(m.output.empty());  // tied embeddings
    EXPECT_EQ(&m.output_matrix(), &m.token_embd);
    for (const NaiveLayer& l : m.layers) {
        EXPECT_EQ(l.bq.size(), 128u);
        EXPECT_EQ(l.bk.size(), 64u);
        EXPECT_EQ(l.bv.size(), 64u);
    }
}

TEST(NaiveForward, Qwen2TinyTeacherForcedMatchesLlamaCpp) {
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("reference/qwen2-tiny.json");
    const json ref = read_json("reference/qwen2-tiny.json");
    const double max_diff =
        expect_teacher_forced_match(cached_model("qwen2-tiny.gguf"), ref, {1e-4, 1e-3, 1e-6});
    EXPECT_LT(max_diff, 1e-4);
}

TEST(NaiveForward, Qwen2TinyGreedyFirstTokensMatchLlamaCpp) {
    // A random model: greedy is fragile over long runs, so only the first few tokens are checked.
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("reference/qwen2-tiny.json");
    const json ref = read_json("reference/qwen2-tiny.json");
    const auto prompt = ref.at("prompt_ids").get<std::vector<int32_t>>();
    auto expected = ref.at("greedy").at("ids").get<std::vector<int32_t>>();
    expected.resize(4);
    EXPECT_EQ(naive_greedy(cached_model("qwen2-tiny.gguf"), prompt, 4), expected);
}

TEST(NaiveForward, LoadsQ8_0ButRejectsOtherQuantizedTensors) {
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny-q8_0.gguf");
    const GgufFile file = GgufFile::open(::inferscope::testing::shared_model("qwen2-tiny-q8_0.gguf").string());
    EXPECT_NO_THROW(load_naive_model(file));
    GgufTensorInfo q4_k = *file.find_tensor("blk.0.attn_q.weight");
    q4_k.type = GgmlType::Q4_K;
    EXPECT_THROW(naive_tensor_to_double(q4_k), std::runtime_error);
}

// ---- hand-built GGUF files (no shared data needed) ----

class GgufBytes {
public:
    template <typename T>
    void put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        bytes_.insert(bytes_.end(), p, p + sizeof(T));
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        bytes_.insert(bytes_.end(), s.begin(), s.end());
    }
    void pad_to(size_t alignment) {
        while (bytes_.size() % alignment != 0) bytes_.push_back(0);
    }
    std::vector<uint8_t>& bytes() { return bytes_; }

private:
    std::vector<uint8_t> bytes_;
};

// A GGUF v3 file with general.architecture = arch and 1-D tensors of 4 elements each.
GgufFile make_gguf(const std::string& arch, const std::vector<std::pair<std::string, GgmlType>>& tensors,
                   const std::vector<std::vector<uint8_t>>& data) {
    GgufBytes b;
    b.put<uint32_t>(0x46554747);  // "GGUF"
    b.put<uint32_t>(3);
    b.put<uint64_t>(tensors.size());
    b.put<uint64_t>(1);
    b.put_string("general.architecture");
    b.put<uint32_t>(8);  // string
    b.put_string(arch);
    uint64_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        b.put_string(tensors[i].first);
        b.put<uint32_t>(1);
        b.put<uint64_t>(4);
        b.put<uint32_t>(static_cast<uint32_t>(tensors[i].second));
        b.put<uint64_t>(offset);
        offset += (data[i].size() + 31) / 32 * 32;
    }
    for (const auto& d : data) {
        b.pad_to(32);
        b.bytes().insert(b.bytes().end(), d.begin(), d.end());
    }
    b.pad_to(32);
    return GgufFile::from_bytes(std::move(b.bytes()), "hand-built.gguf");
}

template <typename T>
std::vector<uint8_t> raw(const std::vector<T>& values) {
    std::vector<uint8_t> out(values.size() * sizeof(T));
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

TEST(NaiveForward, ConvertsF32F16AndBF16Tensors) {
    const std::vector<float> values = {1.5f, -2.0f, 0.333984375f, 65504.0f};  // exact in F16 and F32
    std::vector<uint16_t> f16, bf16;
    for (float v : values) f16.push_back(fp32_to_fp16(v));
    for (float v : {1.5f, -2.0f, 0.333984375f, 3.0e38f}) bf16.push_back(fp32_to_bf16(v));
    const GgufFile file = make_gguf("llama", {{"a", GgmlType::F32}, {"b", GgmlType::F16}, {"c", GgmlType::BF16}},
                                    {raw(values), raw(f16), raw(bf16)});
    const std::vector<double> expected(values.begin(), values.end());
    EXPECT_EQ(naive_tensor_to_double(*file.find_tensor("a")), expected);
    EXPECT_EQ(naive_tensor_to_double(*file.find_tensor("b")), expected);
    const auto c = naive_tensor_to_double(*file.find_tensor("c"));
    EXPECT_EQ(c[0], 1.5);
    EXPECT_EQ(c[1], -2.0);
    EXPECT_EQ(c[2], static_cast<double>(round_to_bf16(0.333984375f)));
    EXPECT_EQ(c[3], static_cast<double>(round_to_bf16(3.0e38f)));
}

TEST(NaiveForward, RejectsOtherArchitectures) {
    const GgufFile file = make_gguf("gpt2", {}, {});
    EXPECT_THROW(load_naive_model(file), std::runtime_error);
    const GgufFile i32 = make_gguf("llama", {{"x", GgmlType::I32}}, {raw(std::vector<int32_t>{1, 2, 3, 4})});
    EXPECT_THROW(naive_tensor_to_double(*i32.find_tensor("x")), std::runtime_error);
}

TEST(NaiveArgmax, TiesGoToTheLowestId) {
    EXPECT_EQ(naive_argmax({1.0, 3.0, 3.0, 2.0}), 1);
    EXPECT_EQ(naive_argmax({-1.0}), 0);
    EXPECT_EQ(naive_argmax({}), -1);
}

}  // namespace
}  // namespace inferscope::reference
