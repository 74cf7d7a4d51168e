#pragma once
// Speculative decoding, the analytic part: the expected speed-up over plain decoding
// against gamma (draft tokens per verify), for the acceptance rate alpha and the cost ratio
// c (draft step time / target step time) set with sliders, from engine/speculative/
// spec_table.h: (1 - alpha^(gamma+1)) / (1 - alpha) tokens per verify, divided by the
// verify's cost gamma x c + 1 target steps. A measured run (SpeculativeLab) adds its
// (gamma, real speed-up) point and sets the curves to its measured alpha and c.
#include <optional>

#include "ui/panels/chart_panel.h"

class QLabel;
class QLineSeries;
class QScatterSeries;
class QSlider;

namespace inferscope::ui {

class SpeculativePanel : public ChartPanel {
    Q_OBJECT
public:
    // The curves span gamma = 1 ... kMaxGamma.
    static constexpr int kMaxGamma = 16;
    // alpha and c sliders move in steps of 1 / kSliderSteps.
    static constexpr int kSliderSteps = 100;

    explicit SpeculativePanel(QWidget* parent = nullptr);

    // The measured values while set by set_measurement (until the user moves that slider),
    // else the sliders'.
    double alpha() const;
    int gamma() const;
    double cost_ratio() const;

    // Plots the measured point (gamma, speedup) and moves the sliders to the measured alpha,
    // gamma and cost ratio; the curves use the exact measured alpha and c.
    void set_measurement(int gamma, double speedup, double alpha, double cost_ratio);
    // Removes the measured point (its model is gone); the sliders stay where they are.
    void clear_measurement();

    QSlider* alpha_slider() const { return alpha_slider_; }
    QSlider* gamma_slider() const { return gamma_slider_; }
    QSlider* cost_slider() const { return cost_slider_; }
    QLabel* readout() const { return readout_; }
    QLabel* lesson() const { return lesson_; }

private:
    QWidget* build_controls();
    void style_series(bool dark) override;
    void recompute();

    QSlider* alpha_slider_;
    QSlider* gamma_slider_;
    QSlider* cost_slider_;
    QLabel* alpha_value_;
    QLabel* gamma_value_;
    QLabel* cost_value_;
    QLabel* readout_;
    QLabel* lesson_;
    QLineSeries* speedup_;
    QLineSeries* break_even_;
    QScatterSeries* chosen_;
    QScatterSeries* measured_;
    std::optional<double> measured_alpha_;
    std::optional<double> measured_cost_ratio_;
};

}  // namespace inferscope::ui
