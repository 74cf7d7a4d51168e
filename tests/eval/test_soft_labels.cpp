// Distillation soft labels: hand-computed tempered softmax, the square-root law of ratios
// at T = 2, KL(teacher || student) at a temperature; on stories260K, the same law on real
// logits and a quantized student.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "engine/eval/quality.h"
#include "engine/eval/soft_labels.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/session.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

// Logits 2, 1, 0 on ids 10, 11, 12 and -1000 elsewhere (exp underflows to exactly 0).
std::vector<float> three_token_logits(int n_vocab, float a = 2, float b = 1, float c = 0) {
    std::vector<float> logits(static_cast<size_t>(n_vocab), -1000.0f);
    logits[10] = a;
    logits[11] = b;
    logits[12] = c;
    return logits;
}

TEST(SoftLabels, HandComputedTemperedDistribution) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    const std::vector<float> logits = three_token_logits(model->config().n_vocab);
    const SoftLabels t1 = soft_labels(model->tokenizer(), logits, 1.0, 3);
    ASSERT_EQ(t1.top.size(), 3u);
    EXPECT_EQ(t1.top[0].id, 10);
    EXPECT_EQ(t1.top[2].id, 12);
    EXPECT_EQ(t1.top[0].text, model->tokenizer().token_to_piece(10));
    // e^2 / (e^2 + e + 1) = 0.6652409558, e / (...) = 0.2447284711, 1 / (...) = 0.0900305732
    EXPECT_NEAR(t1.top[0].probability, 0.6652409558, 1e-9);
    EXPECT_NEAR(t1.top[1].probability, 0.2447284711, 1e-9);
    EXPECT_NEAR(t1.top[2].probability, 0.0900305732, 1e-9);
    EXPECT_NEAR(t1.mass_beyond_argmax, 0.3347590442, 1e-9);
    EXPECT_NEAR(t1.top_to_kth_ratio, 7.3890560989, 1e-8);  // e^2
    const SoftLabels t2 = soft_labels(model->tokenizer(), logits, 2.0, 3);
    EXPECT_NEAR(t2.top[0].probability, 0.5064803911, 1e-9);
    EXPECT_NEAR(t2.mass_beyond_argmax, 0.4935196089, 1e-9);
    EXPECT_NEAR(t2.top_to_kth_ratio, 2.7182818285, 1e-8);  // e = sqrt(e^2)
    EXPECT_FALSE(t1.kl_teacher_student.has_value());
}

TEST(SoftLabels, KlToAStudentAtEachTemperature) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    const int n_vocab = model->config().n_vocab;
    const std::vector<float> teacher = three_token_logits(n_vocab);
    const std::vector<float> uniform_student = three_token_logits(n_vocab, 0, 0, 0);
    // KL(p || uniform over 3) = ln 3 - H(p)
    EXPECT_NEAR(*soft_labels(model->tokenizer(), teacher, 1.0, 2, uniform_student).kl_teacher_student, 0.2662167068, 1e-7);
    EXPECT_NEAR(*soft_labels(model->tokenizer(), teacher, 2.0, 2, uniform_student).kl_teacher_student, 0.0784209519, 1e-7);
    EXPECT_NEAR(kl_divergence(teacher, uniform_student, 1.0), kl_divergence(teacher, uniform_student), 0.0);
    EXPECT_EQ(*soft_labels(model->tokenizer(), teacher, 2.0, 2, teacher).kl_teacher_student, 0.0);
    // The student read on the teacher's top tokens: uniform over the three, whatever T.
    const SoftLabels on_teacher = soft_labels(model->tokenizer(), teacher, 2.0, 2, uniform_student);
    ASSERT_EQ(on_teacher.student_on_top.size(), 2u);
    EXPECT_NEAR(on_teacher.student_on_top[0], 1.0 / 3.0, 1e-12);
    EXPECT_NEAR(on_teacher.student_on_top[1], 1.0 / 3.0, 1e-12);
    // A student that ranks the tokens the other way round gives each its own probability.
    const std::vector<float> reversed = three_token_logits(n_vocab, 0, 1, 2);
    const SoftLabels crossed = soft_labels(model->tokenizer(), teacher, 1.0, 3, reversed);
    EXPECT_EQ(crossed.top[0].id, 10);
    EXPECT_NEAR(crossed.student_on_top[0], 0.0900305732, 1e-9);  // the teacher's first is the student's last
    EXPECT_NEAR(crossed.student_on_top[2], 0.6652409558, 1e-9);
    EXPECT_TRUE(soft_labels(model->tokenizer(), teacher, 1.0, 3).student_on_top.empty());
}

TEST(SoftLabels, BadInputsAreClearErrors) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    const std::vector<float> logits = three_token_logits(model->config().n_vocab);
    EXPECT_THROW(soft_labels(model->tokenizer(), logits, 0.0, 3), InvalidArgument);
    EXPECT_THROW(soft_labels(model->tokenizer(), logits, -1.0, 3), InvalidArgument);
    EXPECT_THROW(soft_labels(model->tokenizer(), logits, 1.0, 0), InvalidArgument);
    EXPECT_THROW(soft_labels(model->tokenizer(), logits, 1.0, 301), InvalidArgument);
    EXPECT_THROW(soft_labels(model->tokenizer(), logits, 1.0, 3, std::vector<float>(5)), InvalidArgument);
}

TEST(SoftLabels, RatiosAtTwoAreSquareRootsOnStories) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const auto teacher_model = Model::load(testing::shared_model("stories260K.gguf").string());
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 64;
    InferenceSession teacher(teacher_model, so);
    const std::vector<TokenId> prompt = teacher_model->tokenizer().encode("Once upon a time, there was a little", true, true);
    const std::vector<float> logits = next_token_logits(teacher, prompt);
    const SoftLabels t1 = soft_labels(teacher_model->tokenizer(), logits, 1.0, 5);
    const SoftLabels t2 = soft_labels(teacher_model->tokenizer(), logits, 2.0, 5);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(t1.top[i].id, t2.top[i].id);  // dividing by T keeps the order
        const double r1 = t1.top[0].probability / t1.top[i].probability;
        const double r2 = t2.top[0].probability / t2.top[i].probability;
        EXPECT_NEAR(r2, std::sqrt(r1), 1e-9 * r2);
    }
    EXPECT_NEAR(t2.top_to_kth_ratio, std::sqrt(t1.top_to_kth_ratio), 1e-9 * t2.top_to_kth_ratio);
    EXPECT_GT(t2.mass_beyond_argmax, t1.mass_beyond_argmax);

    QuantRunOptions q;
    q.n_threads = 1;
    InferenceSession student(quantize_model(teacher_model, parse_quant_scheme("int4:row"), q).model, so);
    const std::vector<float> student_logits = next_token_logits(student, prompt);
    const double kl1 = *soft_labels(teacher_model->tokenizer(), logits, 1.0, 5, student_logits).kl_teacher_student;
    EXPECT_GT(kl1, 0.0);
    EXPECT_NEAR(kl1, kl_divergence(logits, student_logits), 1e-12);
}

}  // namespace
}  // namespace inferscope
