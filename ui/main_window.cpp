#include "ui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardItemModel>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/synth/builtin_models.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/generation_panel.h"
#include "ui/gpu_memory_probe.h"
#include "ui/guided_tour.h"
#include "ui/labs/batching_lab.h"
#include "ui/labs/lab_progress.h"
#include "ui/labs/outliers_lab.h"
#include "ui/labs/phases_lab.h"
#include "ui/labs/quantization_lab.h"
#include "ui/labs/server_lab.h"
#include "ui/labs/soft_labels_lab.h"
#include "ui/labs/speculative_lab.h"
#include "ui/model_info_widget.h"
#include "ui/panels/kv_memory_panel.h"
#include "ui/panels/latency_panel.h"
#include "ui/panels/memory_planner_panel.h"
#include "ui/panels/speculative_panel.h"
#include "ui/tab_help.h"

namespace inferscope::ui {
namespace {

constexpr int kMaxRecentFiles = 8;
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

bool is_gguf(const QUrl& url) { return url.isLocalFile() && url.toLocalFile().endsWith(QLatin1String(".gguf"), Qt::CaseInsensitive); }

}  // namespace

QRect fit_window_into(const QRect& window, const QSize& minimum, const QRect& available) {
    const QSize size = window.size().boundedTo(available.size()).expandedTo(minimum);
    const int x = std::clamp(window.x(), available.left(), std::max(available.left(), available.right() + 1 - size.width()));
    const int y = std::clamp(window.y(), available.top(), std::max(available.top(), available.bottom() + 1 - size.height()));
    return {QPoint(x, y), size};
}

MainWindow::MainWindow(bool interactive, QWidget* parent)
    : QMainWindow(parent),
      interactive_(interactive),
      controller_(new EngineController(this)),
      model_info_(new ModelInfoWidget()),
      generation_(new GenerationPanel()),
      charts_(new QTabWidget()),
      latency_(new LatencyPanel()),
      kv_memory_(new KvMemoryPanel()),
      memory_planner_(new MemoryPlannerPanel()),
      speculative_(new SpeculativeLab(*controller_)),
      gpu_probe_(new GpuMemoryProbe(this)),
      batching_(new BatchingLab(*controller_)),
      phases_(new PhasesLab(*controller_)),
      outliers_(new OutliersLab(*controller_)),
      soft_labels_(new SoftLabelsLab(*controller_)),
      quantization_(new QuantizationLab(*controller_)),
      server_(new ServerLab()) {
    setWindowTitle(tr("InferScope"));
    setAcceptDrops(true);
    // The labs name themselves; the names key each tab's help (ui/tab_help.h).
    latency_->setObjectName(QStringLiteral("step-latency"));
    kv_memory_->setObjectName(QStringLiteral("kv-memory"));
    memory_planner_->setObjectName(QStringLiteral("memory-planner"));
    charts_->addTab(latency_, tr("Latency"));
    charts_->addTab(kv_memory_, tr("KV cache"));
    charts_->addTab(memory_planner_, tr("Memory plan"));
    charts_->addTab(speculative_, tr("Speculative"));
    connect(gpu_probe_, &GpuMemoryProbe::detected, this, [this](const QVector<GpuMemory>& gpus) {
        for (const GpuMemory& g : gpus) memory_planner_->add_detected_memory(g.device, g.budget_bytes / kBytesPerGiB);
        offer_vulkan(vulkan_offer(gpus));
    });
    gpu_probe_->start();
    charts_->addTab(batching_, tr("Batching"));
    charts_->addTab(phases_, tr("Prefill/decode"));
    charts_->addTab(outliers_, tr("Outliers"));
    charts_->addTab(soft_labels_, tr("Soft labels"));
    charts_->addTab(quantization_, tr("Quantization"));
    charts_->addTab(server_, tr("Server"));
    // Short tab names keep every tab in view at the default size; the full name is the tooltip.
    for (int i = 0; i < charts_->count(); ++i) {
        if (const auto help = tab_help(charts_->widget(i)->objectName())) charts_->setTabToolTip(i, help->title);
    }

    model_info_->show_empty();
    auto* left = new QWidget();
    auto* left_layout = new QVBoxLayout(left);
    left_layout->addWidget(build_backend_row());
    // The model's details give way first (they scroll) so the generation controls stay whole.
    auto* info_scroll = new QScrollArea();
    info_scroll->setWidget(model_info_);
    info_scroll->setWidgetResizable(true);
    info_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    info_scroll->setFrameShape(QFrame::NoFrame);
    info_scroll->setMinimumHeight(info_scroll->fontMetrics().height() * 6);
    info_scroll->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Ignored);
    left_layout->addWidget(info_scroll, 1);
    left_layout->addWidget(generation_, 2);
    // The left column scrolls vertically instead of squeezing its controls below their size.
    auto* left_scroll = new QScrollArea();
    left_scroll->setWidget(left);
    left_scroll->setWidgetResizable(true);
    left_scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    left_scroll->setFrameShape(QFrame::NoFrame);
    left_scroll->setMinimumWidth(left->minimumSizeHint().width() + left_scroll->verticalScrollBar()->sizeHint().width());
    auto* splitter = new QSplitter();
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(left_scroll);
    splitter->addWidget(charts_);
    splitter->setStretchFactor(1, 1);
    setCentralWidget(splitter);

    build_menus();
    build_status_bar();
    connect_controller();
    connect(server_, &ServerLab::target_changed, this, [this](const QString& url, const QString& model) {
        server_url_ = url;
        status_server_->setText(tr("Server: %1 (%2)").arg(url, model));
        update_title();
    });
    connect(server_, &ServerLab::failed, this, [this](const QString& message) { statusBar()->showMessage(message, 8000); });
    connect(generation_, &GenerationPanel::generate_requested, this, &MainWindow::start_generation);
    connect(generation_, &GenerationPanel::stop_requested, this, &MainWindow::stop);
    connect(generation_, &GenerationPanel::lab_prompt_changed, this, [this](const QString& text) {
        outliers_->set_prompt(text);
        soft_labels_->set_prompt(text);
        speculative_->set_generation_prompt(text);
    });
    restore_settings();
    speculative_->set_generation_prompt(generation_->prompt_edit()->toPlainText());
    apply_chart_theme();
}

MainWindow::~MainWindow() = default;

QList<const ChartPanel*> MainWindow::chart_panels() const {
    QList<const ChartPanel*> panels{latency_, kv_memory_, memory_planner_, &speculative_->panel()};
    for (const ChartPanel* panel : batching_->panels()) panels << panel;
    for (const ChartPanel* panel : phases_->panels()) panels << panel;
    for (const ChartPanel* panel : outliers_->panels()) panels << panel;
    for (const ChartPanel* panel : soft_labels_->panels()) panels << panel;
    for (const ChartPanel* panel : quantization_->panels()) panels << panel;
    for (const ChartPanel* panel : server_->panels()) panels << panel;
    return panels;
}

SpeculativePanel& MainWindow::speculative_panel() { return speculative_->panel(); }

void MainWindow::show_tab(QWidget* widget) {
    for (int i = 0; i < charts_->count(); ++i) {
        if (charts_->widget(i) == widget || charts_->widget(i)->isAncestorOf(widget)) charts_->setCurrentIndex(i);
    }
}

void MainWindow::sync_backend_choice(const QString& backend_in_use) {
    const bool on_vulkan = backend_in_use.startsWith(QLatin1String("Vulkan"));
    const int index = on_vulkan ? backend_->findData(QStringLiteral("vulkan")) : 0;
    const QSignalBlocker blocker(backend_);
    backend_->setCurrentIndex(std::max(index, 0));
}

// The Vulkan entry of the backend menu: the GPU it runs on, or a disabled entry saying why no
// GPU can run it (never a GPU's name while a CPU driver would run).
void MainWindow::offer_vulkan(const VulkanOffer& offer) {
    if (!offer.device.isEmpty()) {
        backend_->addItem(tr("Vulkan: %1").arg(offer.device), QStringLiteral("vulkan"));
        return;
    }
    if (offer.unavailable.isEmpty()) return;
    backend_->addItem(tr("Vulkan: no usable GPU"));
    const int index = backend_->count() - 1;
    backend_->setItemData(index, offer.unavailable, Qt::ToolTipRole);
    if (auto* items = qobject_cast<QStandardItemModel*>(backend_->model())) items->item(index)->setEnabled(false);
}

QWidget* MainWindow::build_backend_row() {
    auto* row = new QWidget();
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    backend_ = new QComboBox();
    backend_->addItem(tr("CPU"), QStringLiteral("cpu"));
    backend_->setToolTip(tr("Compute backend: the CPU, or the GPU through Vulkan when one is detected"));
    connect(backend_, &QComboBox::currentIndexChanged, this, [this](int index) {
        controller_->set_vulkan(backend_->itemData(index).toString() == QLatin1String("vulkan"));
    });
    threads_ = new QSpinBox();
    threads_->setRange(0, std::max(1, QThread::idealThreadCount()));
    threads_->setSpecialValueText(tr("auto (one per core)"));
    threads_->setToolTip(tr("CPU threads for matrix products and attention"));
    auto* backend_label = new QLabel(tr("&Backend:"));
    backend_label->setBuddy(backend_);
    auto* threads_label = new QLabel(tr("&Threads:"));
    threads_label->setBuddy(threads_);
    layout->addWidget(backend_label);
    layout->addWidget(backend_);
    layout->addWidget(threads_label);
    layout->addWidget(threads_);
    layout->addStretch();
    connect(threads_, &QSpinBox::valueChanged, controller_, &EngineController::set_threads);
    return row;
}

void MainWindow::build_menus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    QAction* open = file->addAction(tr("&Open Model…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open a GGUF model"), QString(),
                                                          tr("GGUF models (*.gguf);;All files (*)"));
        if (!path.isEmpty()) open_model(path);
    });
    open->setShortcut(QKeySequence::Open);
    recent_menu_ = file->addMenu(tr("Open &Recent"));
    QMenu* builtin = file->addMenu(tr("Open &Built-in Model"));
    builtin->addAction(tr("&stories260K (trained on TinyStories)"), this, [this] { open_model(QString()); });
    builtin->addAction(tr("S&ynthetic (random weights)"), this,
                       [this] { open_model(QString::fromStdString(builtin_model_path(BuiltinModel::Synthetic))); });
    file->addSeparator();
    file->addAction(tr("&Connect to Server…"), this, &MainWindow::connect_to_server);
    file->addSeparator();
    file->addAction(tr("&Export Current Chart…"), this, &MainWindow::export_current_chart)->setShortcut(QKeySequence::Save);
    file->addAction(tr("Export &All Charts…"), this, &MainWindow::choose_export_folder);
    file->addSeparator();
    file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    QAction* generate = run->addAction(tr("&Generate"), this, &MainWindow::start_generation);
    generate->setShortcuts({QKeySequence(Qt::CTRL | Qt::Key_Return), QKeySequence(Qt::CTRL | Qt::Key_Enter)});
    QAction* stop_action = run->addAction(tr("&Stop"), this, &MainWindow::stop);
    stop_action->setShortcut(QKeySequence(Qt::Key_Escape));

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Help on This Tab"), this, &MainWindow::show_tab_help)->setShortcut(QKeySequence::HelpContents);
    help->addAction(tr("&Guided Tour…"), this, [this] { open_guided_tour(); });
    help->addSeparator();
    help->addAction(tr("&About InferScope"), this, &MainWindow::show_about);
}

void MainWindow::build_status_bar() {
    status_model_ = new QLabel();
    progress_ = new QProgressBar();
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(240);
    progress_->hide();
    cancel_load_ = new QPushButton(tr("Cancel"));
    cancel_load_->hide();
    connect(cancel_load_, &QPushButton::clicked, controller_, &EngineController::cancel);
    status_server_ = new QLabel();
    statusBar()->addWidget(status_model_, 1);
    statusBar()->addPermanentWidget(status_server_);
    statusBar()->addPermanentWidget(progress_);
    statusBar()->addPermanentWidget(cancel_load_);
}

void MainWindow::connect_to_server() {
    const QString last = QSettings().value(QStringLiteral("server/url")).toString();
    const auto target = ask_server_target(this, server_url_.isEmpty() ? last : server_url_);
    if (!target) return;
    QSettings().setValue(QStringLiteral("server/url"), target->first);  // the URL only, never the key
    server_->connect_to(target->first, target->second);
    show_tab(server_);
}

void MainWindow::update_title() {
    QString title = shown_model_.isEmpty() ? tr("InferScope") : tr("InferScope — %1").arg(shown_model_);
    if (!server_url_.isEmpty()) title += tr(" — server %1").arg(server_url_);
    setWindowTitle(title);
}

void MainWindow::connect_controller() {
    EngineController* c = controller_;
    connect(c, &EngineController::preview_ready, this, [this](const ModelSummary& s) { model_info_->show_summary(s, false); });
    connect(c, &EngineController::load_progress, this, [this](double fraction, const QString& stage) {
        progress_->setValue(static_cast<int>(fraction * 1000));
        show_progress_text(*progress_, stage);
    });
    connect(c, &EngineController::model_loaded, this, [this](const ModelSummary& s) {
        model_info_->show_summary(s, true);
        sync_backend_choice(s.backend);
        kv_memory_->set_model(s);
        memory_planner_->set_model(s);
        latency_->reset();
        // Another file, or the same path rewritten: the output belongs to the previous model.
        const QString identity = s.path + QLatin1Char('#') + s.fingerprint;
        if (identity != results_model_identity_) generation_->clear_results();
        results_model_identity_ = identity;
        generation_->set_model_ready(true);
        generation_->set_chat_template(s);
        const QString shown = s.builtin ? s.name : QFileInfo(s.path).fileName();
        status_model_->setText(tr("%1 on %2").arg(shown, s.backend));
        shown_model_ = shown;
        update_title();
        if (!s.builtin) remember_recent(s.path);
    });
    connect(c, &EngineController::load_failed, this, [this](const QString& path, const QString& message) {
        const QString name = path.isEmpty() ? tr("The built-in model") : QFileInfo(path).fileName();
        const bool kept = controller_->has_model();
        if (kept) {
            model_info_->show_summary(controller_->model(), true);
        } else {
            model_info_->show_empty(tr("%1 could not be loaded.").arg(name));
        }
        sync_backend_choice(kept ? controller_->model().backend : QString());
        show_error(tr("Cannot open the model"), tr("%1 could not be loaded:\n\n%2\n\n%3")
                                                    .arg(name, message,
                                                         kept ? tr("The previous model stays loaded.")
                                                              : tr("Open another file or a built-in model (File menu).")));
    });
    connect(c, &EngineController::load_cancelled, this, [this] {
        if (controller_->has_model()) {
            model_info_->show_summary(controller_->model(), true);
            statusBar()->showMessage(tr("Loading cancelled; the previous model stays loaded."), 5000);
        } else {
            model_info_->show_empty(tr("Loading was cancelled."));
        }
    });
    connect(c, &EngineController::busy_changed, this, [this](bool busy) {
        generation_->set_running(busy);
        if (!busy) loading_ = false;
        progress_->setVisible(loading_);
        cancel_load_->setVisible(loading_);
    });
    connect(c, &EngineController::generation_started, this, [this](int, const QString& prompt_text) {
        decoded_tokens_ = 0;
        if (!generation_->continuing_conversation()) {  // a conversation's charts grow across its turns
            latency_->reset();
            kv_memory_->reset();
        }
        generation_->start_output(prompt_text);
    });
    connect(c, &EngineController::text_generated, generation_, &GenerationPanel::append_output);
    connect(c, &EngineController::steps_completed, this, [this](const QVector<StepRecord>& steps) {
        for (const StepRecord& step : steps) decoded_tokens_ += !step.recompute && step.phase == QLatin1String("decode");
        latency_->add_steps(steps);
        kv_memory_->add_steps(steps);
        generation_->add_steps(steps);
    });
    connect(c, &EngineController::generation_finished, this, [this](const GenerationReport& report) {
        requested_tokens_ = 0;
        latency_->set_report(report);
        generation_->show_report(report);
    });
    connect(c, &EngineController::generation_failed, this, [this](const QString& message) {
        requested_tokens_ = 0;
        show_error(tr("Generation failed"), message);
    });
}

void MainWindow::open_model(const QString& path) {
    loading_ = true;
    progress_->setValue(0);
    progress_->show();
    cancel_load_->show();
    controller_->load_model(path);
}

void MainWindow::start_generation() {
    if (!controller_->has_model()) return;
    const GenerationRequest request = generation_->request();
    if (request.prompt.trimmed().isEmpty()) {
        show_error(tr("Nothing to generate from"), tr("Type a prompt first."));
        return;
    }
    requested_tokens_ = request.n_predict;
    controller_->generate(request);
}

void MainWindow::stop() {
    const bool generating = requested_tokens_ > 0 && controller_->busy();
    controller_->cancel();  // delivers the steps produced so far
    if (generating) {
        statusBar()->showMessage(tr("Stopped at %1 of %2 tokens").arg(decoded_tokens_).arg(requested_tokens_));
    }
    requested_tokens_ = 0;
}

ExportProvenance MainWindow::export_provenance() const {
    ExportProvenance p;
    p.time = QDateTime::currentDateTimeUtc();
    if (!controller_->has_model()) {
        p.model = tr("no model loaded");
        return p;
    }
    const ModelSummary& s = controller_->model();
    p.model = s.builtin ? s.name : tr("%1 (%2)").arg(s.name.isEmpty() ? QFileInfo(s.path).fileName() : s.name, s.path);
    if (!s.weights.isEmpty()) p.model += tr(", weights %1").arg(s.weights);
    p.fingerprint = s.fingerprint;
    p.backend = s.backend;
    return p;
}

QStringList MainWindow::export_all_charts(const QString& dir) {
    const ExportProvenance provenance = export_provenance();
    return export_all(chart_panels(), dir, &provenance);
}

QStringList MainWindow::save_screenshots(const QString& dir) {
    QStringList errors;
    if (!QDir().mkpath(dir)) return {tr("%1: cannot create the folder").arg(dir)};
    const auto save = [&](QWidget* widget, const QString& name) {
        QCoreApplication::processEvents();
        const QString path = QDir(dir).filePath(name);
        const QString error = save_file_atomically(path, [&](QSaveFile& file) { return widget->grab().save(&file, "PNG"); });
        if (!error.isEmpty()) errors << error;
    };
    const int current = charts_->currentIndex();
    save(this, QStringLiteral("main-window.png"));
    for (int i = 0; i < charts_->count(); ++i) {
        charts_->setCurrentIndex(i);
        const auto* panel = qobject_cast<const ChartPanel*>(charts_->widget(i));
        const QString name = panel ? panel->export_name() : charts_->widget(i)->objectName();
        save(charts_->widget(i), QStringLiteral("panel-%1.png").arg(name.isEmpty() ? QString::number(i) : name));
    }
    charts_->setCurrentIndex(current);
    return errors;
}

void MainWindow::show_error(const QString& title, const QString& message) {
    if (!interactive_) {
        // Headless runs report errors through the automation runner on stderr.
        statusBar()->showMessage(title);
        return;
    }
    // Non-modal: the window (and the engine) stay usable while the message is up.
    auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
}

void MainWindow::remember_recent(const QString& path) {
    const QString absolute = QFileInfo(path).absoluteFilePath();
    recent_files_.removeAll(absolute);
    recent_files_.prepend(absolute);
    while (recent_files_.size() > kMaxRecentFiles) recent_files_.removeLast();
    rebuild_recent_menu();
    save_settings();
}

void MainWindow::rebuild_recent_menu() {
    recent_menu_->clear();
    for (const QString& path : recent_files_) {
        recent_menu_->addAction(QFileInfo(path).fileName(), this, [this, path] { open_model(path); })->setToolTip(path);
    }
    recent_menu_->setEnabled(!recent_files_.isEmpty());
}

void MainWindow::apply_chart_theme() {
    const bool dark = palette().color(QPalette::Window).lightness() < 128;
    latency_->set_dark_theme(dark);
    kv_memory_->set_dark_theme(dark);
    memory_planner_->set_dark_theme(dark);
    speculative_->panel().set_dark_theme(dark);
    for (ChartPanel* panel : batching_->panels() + phases_->panels() + outliers_->panels()) panel->set_dark_theme(dark);
    for (ChartPanel* panel : soft_labels_->panels()) panel->set_dark_theme(dark);
    for (ChartPanel* panel : quantization_->panels()) panel->set_dark_theme(dark);
}

void MainWindow::export_current_chart() {
    const auto* panel = qobject_cast<const ChartPanel*>(charts_->currentWidget());
    // A lab tab exports its first chart.
    if (panel == nullptr && charts_->currentWidget()) panel = charts_->currentWidget()->findChild<const ChartPanel*>();
    if (panel == nullptr) return;
    QString selected;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export chart"), panel->export_name() + QStringLiteral(".png"),
        tr("PNG image (*.png);;SVG drawing (*.svg);;CSV data (*.csv);;JSON data (*.json)"), &selected);
    if (path.isEmpty()) return;
    ExportFormat format = ExportFormat::Png;
    for (ExportFormat f : {ExportFormat::Svg, ExportFormat::Csv, ExportFormat::Json}) {
        if (path.endsWith(QLatin1Char('.') + export_format_suffix(f), Qt::CaseInsensitive)) format = f;
    }
    const ExportProvenance provenance = export_provenance();
    const QString error = export_chart(*panel, path, format, &provenance);
    if (!error.isEmpty()) {
        show_error(tr("Export failed"), error);
        return;
    }
    statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 8000);
}

void MainWindow::choose_export_folder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Export all charts to"));
    if (dir.isEmpty()) return;
    const QStringList errors = export_all_charts(dir);
    if (!errors.isEmpty()) {
        show_error(tr("Export failed"), errors.join(QLatin1Char('\n')));
    } else {
        statusBar()->showMessage(tr("Exported %1 charts to %2").arg(chart_panels().size()).arg(dir), 5000);
    }
}

QString MainWindow::current_tab_help() const {
    const QWidget* tab = charts_->currentWidget();
    const auto help = tab != nullptr ? tab_help(tab->objectName()) : std::nullopt;
    if (!help) return {};
    return tr("<h3>%1</h3><p>%2</p><p><b>Try this:</b> %3</p>")
        .arg(help->title.toHtmlEscaped(), help->what.toHtmlEscaped(), help->try_this.toHtmlEscaped());
}

void MainWindow::show_tab_help() {
    const QString text = current_tab_help();
    if (!text.isEmpty()) QMessageBox::information(this, tr("Help on this tab"), text);
}

void MainWindow::show_tab_named(const QString& key) {
    for (int i = 0; i < charts_->count(); ++i) {
        if (charts_->widget(i)->objectName() == key) charts_->setCurrentIndex(i);
    }
}

GuidedTour& MainWindow::open_guided_tour() {
    if (tour_ == nullptr) {
        tour_ = new GuidedTour(guided_tour_steps(), [this](const QString& key) { show_tab_named(key); }, this);
    }
    tour_->go_to(tour_->step());
    tour_->show();
    tour_->raise();
    return *tour_;
}

void MainWindow::show_about() {
    QMessageBox::about(this, tr("About InferScope"),
                       tr("<h3>InferScope 0.1</h3><p>A laboratory for the cost of LLM inference: per-step latency, "
                          "KV-cache memory, batching and quantization, measured on your model and hardware.</p>"
                          "<p>Engine backend: %1</p>")
                           .arg(controller_->has_model() ? controller_->model().backend : tr("(no model loaded)")));
}

void MainWindow::restore_settings() {
    QSettings settings;
    if (!restoreGeometry(settings.value(QStringLiteral("window/geometry")).toByteArray())) {
        resize(1440, 880);
    } else if (const QScreen* current = screen()) {
        // Saved on a larger or another screen: brought onto this one.
        setGeometry(fit_window_into(geometry(), minimumSizeHint(), current->availableGeometry()));
    }
    recent_files_ = settings.value(QStringLiteral("models/recent")).toStringList();
    {
        // Applied before any model loads, without rebuilding a session.
        const QSignalBlocker blocker(threads_);
        threads_->setValue(settings.value(QStringLiteral("backend/threads"), 0).toInt());
    }
    if (threads_->value() != 0) controller_->set_threads(threads_->value());
    generation_->restore_settings(settings);
    rebuild_recent_menu();
}

void MainWindow::save_settings() const {
    QSettings settings;
    settings.setValue(QStringLiteral("window/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("models/recent"), recent_files_);
    settings.setValue(QStringLiteral("backend/threads"), threads_->value());
    generation_->save_settings(settings);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    controller_->cancel();
    save_settings();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && is_gguf(urls.front())) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && is_gguf(urls.front())) {
        open_model(urls.front().toLocalFile());
        event->acceptProposedAction();
    }
}

void MainWindow::changeEvent(QEvent* event) {
    if (event->type() == QEvent::PaletteChange) apply_chart_theme();
    QMainWindow::changeEvent(event);
}

}  // namespace inferscope::ui
