// A conversation in the main window: a model with a chat template opens in conversation
// mode, each turn is rendered by the template, and the next turn reuses the KV cache; the
// labs tokenize a rendered conversation as generation does.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QFile>
#include <QPlainTextEdit>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>

#include "engine/gguf/gguf_file.h"
#include "engine/synth/synthetic_model.h"
#include "ui/engine_controller.h"
#include "ui/generation_panel.h"
#include "ui/labs/lab_measurements.h"
#include "ui/main_window.h"
#include "ui/panels/kv_memory_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::shared_model;
using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;

// A tiny qwen3 with Qwen's vocabulary and Qwen2.5's chat template, written to `dir`.
QString write_chat_model(const QTemporaryDir& dir) {
    SyntheticModelSpec spec = synthetic_preset("tiny-qwen3");
    spec.vocab_path = shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string();
    std::ifstream in(shared_model("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja"));
    std::ostringstream text;
    text << in.rdbuf();
    spec.chat_template = text.str();
    const QString path = dir.filePath(QStringLiteral("chat.gguf"));
    build_synthetic_model(spec).write_file(path.toStdString());
    return path;
}

bool run_turn(MainWindow& window, const QString& message) {
    QPlainTextEdit* prompt = window.generation_panel().prompt_edit();
    prompt->clear();
    QTest::keyClicks(prompt, message);
    bool finished = false;
    const auto connection =
        QObject::connect(&window.controller(), &EngineController::generation_finished, [&] { finished = true; });
    window.start_generation();
    const bool done = wait_until([&] { return finished && !window.controller().busy(); }, kEngineWaitMs);
    QObject::disconnect(connection);
    return done;
}

TEST(ChatInWindow, TurnsAreRenderedByTheTemplateAndKeepTheCache) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
    QTemporaryDir dir;
    ASSERT_TRUE(dir.isValid());
    const QString path = write_chat_model(dir);
    MainWindow window;
    window.show();
    bool loaded = false;
    QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    window.open_model(path);
    ASSERT_TRUE(wait_until([&] { return loaded && !window.controller().busy(); }, kEngineWaitMs));
    GenerationPanel& panel = window.generation_panel();
    ASSERT_TRUE(panel.chat_mode()) << "a model with a template opens in conversation mode";
    panel.set_n_predict(4);

    // What the labs analyse is the rendered conversation, as the model will see it.
    panel.prompt_edit()->setPlainText(QStringLiteral("Hi"));
    EXPECT_TRUE(panel.lab_prompt().contains(QStringLiteral("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")))
        << panel.lab_prompt().toStdString();

    ASSERT_TRUE(run_turn(window, QStringLiteral("Hello there, how are you doing today?")));
    ASSERT_EQ(panel.history().size(), 2);
    EXPECT_EQ(panel.history()[0].content, QStringLiteral("Hello there, how are you doing today?"));
    EXPECT_TRUE(panel.last_rendered_prompt().endsWith(QStringLiteral("<|im_start|>assistant\n")));
    const qint64 kv_after_first = static_cast<qint64>(window.kv_memory_panel().last_in_use_point().x());

    ASSERT_TRUE(run_turn(window, QStringLiteral("And tomorrow?")));
    ASSERT_EQ(panel.history().size(), 4);
    EXPECT_TRUE(panel.last_rendered_prompt().contains(QStringLiteral("<|im_start|>user\nAnd tomorrow?<|im_end|>")));
    EXPECT_TRUE(panel.output_view()->toPlainText().contains(QStringLiteral("You: And tomorrow?")));
    // The KV chart was not reset between the turns: it goes on from the first turn's context.
    EXPECT_GT(static_cast<qint64>(window.kv_memory_panel().last_in_use_point().x()), kv_after_first);

    // Raw completion: the toggle starts over and the prompt is fed as it is.
    panel.chat_toggle()->setChecked(false);
    EXPECT_FALSE(panel.chat_mode());
    EXPECT_TRUE(panel.history().isEmpty());
    EXPECT_EQ(panel.lab_prompt(), panel.prompt_edit()->toPlainText());
}

TEST(ChatInWindow, AModelWithoutATemplateCompletesRawText) {
    MainWindow window;
    bool loaded = false;
    QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    window.open_model(QString());  // the built-in model has no template
    ASSERT_TRUE(wait_until([&] { return loaded && !window.controller().busy(); }, kEngineWaitMs));
    EXPECT_FALSE(window.generation_panel().chat_mode());
}

}  // namespace
}  // namespace inferscope::ui

namespace inferscope::ui {
namespace {

// A rendered conversation that writes the BOS text itself gets one BOS in the labs too.
TEST(ChatInLabs, ARenderedBosIsNotDoubled) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-llama-spm.gguf");
    SyntheticModelSpec spec = synthetic_preset("tiny-qwen3");
    spec.vocab_path = shared_model("vocab/ggml-vocab-llama-spm.gguf").string();
    const auto model = Model::from_gguf(GgufFile::from_bytes(build_synthetic_model(spec).to_bytes(), "spm.gguf"));
    ASSERT_TRUE(model->tokenizer().add_bos());
    const LabContext context(model, 0, std::make_shared<std::atomic<bool>>(false), [](double, const QString&) {});
    const TokenId bos = model->tokenizer().bos_id();
    for (const char* prompt : {"<s>[INST] Hi [/INST]", "[INST] Hi [/INST]"}) {
        const NextTokenLogits result = measure_next_token_logits(context, prompt);
        EXPECT_EQ(std::count(result.prompt_ids.begin(), result.prompt_ids.end(), bos), 1) << prompt;
        EXPECT_EQ(result.prompt_ids.front(), bos) << prompt;
    }
}

}  // namespace
}  // namespace inferscope::ui
