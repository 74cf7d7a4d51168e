#pragma once
// Headless runs of the app for reports and tests:
//   inferscope --model F --prompt TEXT --generate N [--measure-labs] --export-all DIR --quit
// loads the model (the built-in one when none is given), generates, optionally runs the lab
// panels' measurements, exports every chart and quits with status 0, or 1 after printing
// the first error.
#include <QObject>
#include <QSet>
#include <QString>

namespace inferscope::ui {

class MainWindow;

struct AutomationOptions {
    QString model;        // empty: the built-in stories260K
    QString prompt;       // empty: keep the window's prompt
    int generate = 0;     // tokens to generate; 0: none
    QString export_dir;   // empty: no export
    QString screenshot_dir;  // empty: none; else PNGs of the window and of each chart tab
    bool quit = false;    // quit when done
    bool measure_labs = false;  // run the lab panels' measurements before exporting
};

// What a headless run measured, as a llama-bench-style Markdown table under its provenance:
// one row per chart with data (its title states the measurement), then the charts left empty.
QString measurement_summary(const MainWindow& window);

class AutomationRunner : public QObject {
    Q_OBJECT
public:
    AutomationRunner(MainWindow& window, AutomationOptions options, QObject* parent = nullptr);
    void start();

Q_SIGNALS:
    void finished(int exit_code);

private:
    enum class Stage { Loading, Generating, MeasuringLabs, Done };
    void on_idle();
    void measure_labs();
    void on_lab_job_done(const QString& kind);
    void fail(const QString& message);
    void complete();

    MainWindow& window_;
    AutomationOptions options_;
    Stage stage_ = Stage::Loading;
    bool failed_ = false;
    QSet<QString> pending_lab_jobs_;
};

}  // namespace inferscope::ui
