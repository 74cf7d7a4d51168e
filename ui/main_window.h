#pragma once
// The InferScope main window: model loading (File > Open, Recent Files, drag and drop),
// the generation panel, and the chart panels, all driven by one EngineController.
#include <QMainWindow>
#include <QRect>
#include <QStringList>

#include "ui/chart_export.h"
#include "ui/engine_types.h"

class QComboBox;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;

namespace inferscope::ui {

// `window` moved and shrunk (not below `minimum`) to lie within `available`, the screen's
// free area: a saved geometry from a larger or another screen must not open off-screen.
QRect fit_window_into(const QRect& window, const QSize& minimum, const QRect& available);

class BatchingLab;
class ChartPanel;
class EngineController;
class GenerationPanel;
class GpuMemoryProbe;
struct VulkanOffer;
class GuidedTour;
class KvMemoryPanel;
class LatencyPanel;
class MemoryPlannerPanel;
class ModelInfoWidget;
class SpeculativeLab;
class SpeculativePanel;
class OutliersLab;
class PhasesLab;
class QuantizationLab;
class ServerLab;
class SoftLabelsLab;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // `interactive` = false (headless automation) reports errors on stderr instead of
    // message boxes.
    explicit MainWindow(bool interactive = true, QWidget* parent = nullptr);
    ~MainWindow() override;

    // An empty path opens the built-in stories260K, "builtin:synthetic" the random model.
    void open_model(const QString& path);
    void start_generation();
    void stop();
    // Writes every chart in every format into `dir`; returns the errors.
    QStringList export_all_charts(const QString& dir);
    // Saves main-window.png and one PNG per chart tab (as shown on screen) into `dir`.
    QStringList save_screenshots(const QString& dir);

    EngineController& controller() { return *controller_; }
    GenerationPanel& generation_panel() { return *generation_; }
    const ModelInfoWidget& model_info() const { return *model_info_; }
    QTabWidget& chart_tabs() { return *charts_; }
    LatencyPanel& latency_panel() { return *latency_; }
    KvMemoryPanel& kv_memory_panel() { return *kv_memory_; }
    MemoryPlannerPanel& memory_planner_panel() { return *memory_planner_; }
    SpeculativePanel& speculative_panel();
    SpeculativeLab& speculative_lab() { return *speculative_; }
    BatchingLab& batching_lab() { return *batching_; }
    PhasesLab& phases_lab() { return *phases_; }
    OutliersLab& outliers_lab() { return *outliers_; }
    SoftLabelsLab& soft_labels_lab() { return *soft_labels_; }
    QuantizationLab& quantization_lab() { return *quantization_; }
    ServerLab& server_lab() { return *server_; }
    // File › Connect to Server…: asks for the URL and key, then connects the Server tab.
    void connect_to_server();
    // Shows the tab holding `widget` (a panel or a lab).
    void show_tab(QWidget* widget);
    QList<const ChartPanel*> chart_panels() const;
    // What every export from this window is tagged with: the loaded model, backend, time.
    ExportProvenance export_provenance() const;
    // Help › Help on This Tab (F1): the current tab's help as rich text.
    QString current_tab_help() const;
    // Help › Guided Tour: opens (or raises) the tour window.
    GuidedTour& open_guided_tour();
    QStringList recent_files() const { return recent_files_; }

protected:
    void closeEvent(QCloseEvent* event) override;
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    QWidget* build_backend_row();
    void offer_vulkan(const VulkanOffer& offer);
    // Shows the backend the loaded model's session really runs on.
    void sync_backend_choice(const QString& backend_in_use);
    void build_menus();
    void build_status_bar();
    void connect_controller();
    void show_error(const QString& title, const QString& message);
    void remember_recent(const QString& path);
    void rebuild_recent_menu();
    void apply_chart_theme();
    void export_current_chart();
    void choose_export_folder();
    void show_about();
    void show_tab_help();
    void show_tab_named(const QString& key);
    void restore_settings();
    void save_settings() const;
    // "InferScope — model", plus " — server URL" while a server is connected.
    void update_title();

    bool interactive_;
    EngineController* controller_;
    ModelInfoWidget* model_info_;
    GenerationPanel* generation_;
    QTabWidget* charts_;
    LatencyPanel* latency_;
    KvMemoryPanel* kv_memory_;
    MemoryPlannerPanel* memory_planner_;
    SpeculativeLab* speculative_;
    GpuMemoryProbe* gpu_probe_;
    BatchingLab* batching_;
    PhasesLab* phases_;
    OutliersLab* outliers_;
    SoftLabelsLab* soft_labels_;
    QuantizationLab* quantization_;
    ServerLab* server_;
    GuidedTour* tour_ = nullptr;
    QString results_model_identity_;  // path and fingerprint of the model the output came from
    QMenu* recent_menu_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QPushButton* cancel_load_ = nullptr;
    QLabel* status_model_ = nullptr;
    QLabel* status_server_ = nullptr;
    QString shown_model_;   // the loaded model's name in the title
    QString server_url_;    // the connected server, if any
    QSpinBox* threads_ = nullptr;
    QComboBox* backend_ = nullptr;  // CPU, then a Vulkan entry once a GPU is detected
    QStringList recent_files_;
    bool loading_ = false;
    int requested_tokens_ = 0;  // of the generation in flight; 0 when none is
    int decoded_tokens_ = 0;    // decode steps of that generation so far
};

}  // namespace inferscope::ui
