#pragma once
// Helpers shared by the UI suites: waiting on the event loop with a deadline, the models
// they open, and a controller with a model loaded.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QString>
#include <filesystem>
#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "engine/model/model.h"
#include "engine/synth/builtin_models.h"
#include "engine/synth/synthetic_model.h"
#include "support/test_paths.h"
#include "ui/engine_controller.h"

namespace inferscope::testing {

// How long a test waits on the engine before it fails: a model load or a generation, and a
// lab's whole measurement. Generous: a busy 2-core machine under the sanitizers is slow.
inline constexpr int kEngineWaitMs = 60000;
inline constexpr int kLabWaitMs = 120000;

// Processes events until `done` holds or `timeout_ms` passes; returns whether it held.
inline bool wait_until(const std::function<bool()>& done, int timeout_ms) {
    QElapsedTimer timer;
    timer.start();
    while (!done()) {
        if (timer.elapsed() > timeout_ms) return false;
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    }
    return true;
}

inline QString shared_model_path(const char* relative) { return QString::fromStdString(shared_model(relative).string()); }

// A new controller (owned by the caller) that has been asked to load `path` (empty: the
// built-in model); `loaded` says whether the load finished within `timeout_ms`.
inline ui::EngineController* new_controller_with_model(const QString& path, int timeout_ms, bool& loaded) {
    auto* controller = new ui::EngineController();
    bool finished = false;
    const auto connection = QObject::connect(controller, &ui::EngineController::model_loaded, [&] { finished = true; });
    controller->load_model(path);
    loaded = wait_until([&] { return finished && !controller->busy(); }, timeout_ms);
    QObject::disconnect(connection);
    return controller;
}

// A CSV export without the "# " provenance lines the window writes before its header.
inline QByteArray without_provenance(const QByteArray& csv) {
    qsizetype start = 0;
    while (csv.mid(start, 2) == "# ") {
        const qsizetype end = csv.indexOf('\n', start);
        if (end < 0) return {};
        start = end + 1;
    }
    return csv.mid(start);
}

// A suite whose tests share one controller with a model loaded and the same model loaded
// again for running the engine directly. A derived suite's SetUpTestSuite calls load_model.
class SharedModelSuite : public ::testing::Test {
protected:
    // `path` empty: the built-in model.
    static void load_model(const QString& path, int timeout_ms) {
        controller_ = new_controller_with_model(path, timeout_ms, loaded_);
        if (path.isEmpty()) {
            direct_model_ = load_builtin_model();
        } else if (const auto builtin = builtin_model_named(path.toStdString())) {
            direct_model_ = load_builtin_model(*builtin);
        } else {
            direct_model_ = Model::load(path.toStdString());
        }
    }
    static void TearDownTestSuite() {
        delete controller_;
        controller_ = nullptr;
        direct_model_.reset();
        loaded_ = false;
    }
    static bool model_loaded() { return loaded_ && controller_->has_model(); }
    static ui::EngineController& controller() { return *controller_; }
    static const std::shared_ptr<const Model>& direct_model() { return direct_model_; }

private:
    static inline ui::EngineController* controller_ = nullptr;
    static inline std::shared_ptr<const Model> direct_model_;
    static inline bool loaded_ = false;
};

// A SharedModelSuite on ../shared/models/stories260K.gguf; without the file its tests skip,
// saying so.
class SharedStoriesSuite : public SharedModelSuite {
protected:
    static constexpr int kStoriesLoadTimeoutMs = 120000;
    static void SetUpTestSuite() {
        if (std::filesystem::exists(shared_model("stories260K.gguf"))) {
            load_model(shared_model_path("stories260K.gguf"), kStoriesLoadTimeoutMs);
        }
    }
    void SetUp() override {
        INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
        ASSERT_TRUE(model_loaded()) << "stories260K.gguf did not load";
    }
};

}  // namespace inferscope::testing
