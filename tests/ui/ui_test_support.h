#pragma once
// Helpers shared by the UI suites: waiting on the event loop with a deadline, and the
// models they open.
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QString>
#include <functional>

#include "support/test_paths.h"

namespace inferscope::testing {

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

}  // namespace inferscope::testing
