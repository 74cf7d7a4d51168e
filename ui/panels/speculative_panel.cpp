#include "ui/panels/speculative_panel.h"

#include <QGridLayout>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>
#include <QValueAxis>
#include <cmath>
#include <initializer_list>

#include "engine/speculative/spec_table.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {
namespace {

// The worked example: a draft that agrees 90% of the time at a tenth of the cost.
constexpr int kExampleAlphaSteps = 90;
constexpr int kExampleGamma = 8;
constexpr int kExampleCostSteps = 10;
constexpr double kExampleLowAlpha = 0.3;

QSlider* make_slider(int minimum, int maximum, int value, const QString& tip) {
    auto* slider = new QSlider(Qt::Horizontal);
    slider->setRange(minimum, maximum);
    slider->setValue(value);
    slider->setToolTip(tip);
    return slider;
}

}  // namespace

SpeculativePanel::SpeculativePanel(QWidget* parent)
    : ChartPanel(QStringLiteral("speculative-speedup"), parent),
      alpha_slider_(make_slider(0, kSliderSteps, kExampleAlphaSteps,
                                tr("Acceptance rate \u03b1: the chance the target accepts a draft token"))),
      gamma_slider_(make_slider(1, kMaxGamma, kExampleGamma, tr("\u03b3: draft tokens proposed per verify pass"))),
      cost_slider_(make_slider(0, kSliderSteps, kExampleCostSteps,
                               tr("Cost ratio c: one draft step's time over one target step's time"))),
      alpha_value_(new QLabel()),
      gamma_value_(new QLabel()),
      cost_value_(new QLabel()),
      readout_(new QLabel()),
      lesson_(new QLabel()),
      speedup_(new QLineSeries()),
      break_even_(new QLineSeries()),
      chosen_(new QScatterSeries()),
      measured_(new QScatterSeries()) {
    auto* x = new QValueAxis();
    x->setTitleText(tr("\u03b3 (draft tokens per verify)"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("speed-up over plain decoding (\u00d7)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    break_even_->setName(tr("break-even (1\u00d7)"));
    chosen_->setName(tr("chosen \u03b3"));
    measured_->setName(tr("measured (none yet)"));
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{speedup_, break_even_, chosen_, measured_}) {
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    auto* box = qobject_cast<QVBoxLayout*>(layout());
    box->insertWidget(0, build_controls());
    wrap_within_column(readout_);
    wrap_within_column(lesson_);
    box->addWidget(readout_);
    box->addWidget(lesson_);
    lesson_->setText(
        tr("Worked example: \u03b1 = 0.9, \u03b3 = 8, c = 0.1 gives %1\u00d7; with \u03b1 = %2 the same draft gives "
           "%3\u00d7, "
           "slower than no speculation.")
            .arg(speculative_speedup(kExampleAlphaSteps / double(kSliderSteps), kExampleGamma,
                                     kExampleCostSteps / double(kSliderSteps)),
                 0, 'f', 2)
            .arg(kExampleLowAlpha)
            .arg(speculative_speedup(kExampleLowAlpha, kExampleGamma, kExampleCostSteps / double(kSliderSteps)), 0, 'f',
                 2));
    // A slider the user moves replaces the measured value it showed.
    connect(alpha_slider_, &QSlider::valueChanged, this, [this] {
        measured_alpha_.reset();
        recompute();
    });
    connect(cost_slider_, &QSlider::valueChanged, this, [this] {
        measured_cost_ratio_.reset();
        recompute();
    });
    connect(gamma_slider_, &QSlider::valueChanged, this, &SpeculativePanel::recompute);
    style_series(false);
    recompute();
}

QWidget* SpeculativePanel::build_controls() {
    auto* controls = new QWidget();
    auto* grid = new QGridLayout(controls);
    grid->setContentsMargins(8, 4, 8, 0);
    const auto row = [grid](int r, const QString& text, QSlider* slider, QLabel* value) {
        auto* label = new QLabel(text);
        label->setBuddy(slider);
        grid->addWidget(label, r, 0);
        grid->addWidget(slider, r, 1);
        value->setMinimumWidth(48);
        grid->addWidget(value, r, 2);
    };
    row(0, tr("Acceptance &\u03b1:"), alpha_slider_, alpha_value_);
    row(1, tr("Draft tokens &\u03b3:"), gamma_slider_, gamma_value_);
    row(2, tr("&Cost ratio c:"), cost_slider_, cost_value_);
    grid->setColumnStretch(1, 1);
    return controls;
}

double SpeculativePanel::alpha() const { return measured_alpha_.value_or(alpha_slider_->value() / double(kSliderSteps)); }
int SpeculativePanel::gamma() const { return gamma_slider_->value(); }
double SpeculativePanel::cost_ratio() const {
    return measured_cost_ratio_.value_or(cost_slider_->value() / double(kSliderSteps));
}

void SpeculativePanel::set_measurement(int gamma, double speedup, double alpha, double cost_ratio) {
    {
        // The sliders show the nearest step (c above 1 pins the slider at its end).
        const QSignalBlocker alpha_block(alpha_slider_), gamma_block(gamma_slider_), cost_block(cost_slider_);
        alpha_slider_->setValue(static_cast<int>(std::lround(alpha * kSliderSteps)));
        gamma_slider_->setValue(gamma);
        cost_slider_->setValue(static_cast<int>(std::lround(cost_ratio * kSliderSteps)));
    }
    measured_alpha_ = alpha;
    measured_cost_ratio_ = cost_ratio;
    measured_->setName(tr("measured: %1\u00d7 at \u03b3 = %2").arg(speedup, 0, 'f', 2).arg(gamma));
    measured_->replace(QList<QPointF>{QPointF(gamma, speedup)});
    recompute();
}

void SpeculativePanel::clear_measurement() {
    measured_alpha_.reset();
    measured_cost_ratio_.reset();
    measured_->clear();
    measured_->setName(tr("measured (none yet)"));
    recompute();
}

void SpeculativePanel::style_series(bool dark) {
    QPen curve(dark ? QColor(0x4F, 0xC3, 0xF7) : QColor(0x15, 0x65, 0xC0));
    curve.setWidthF(2.5);
    speedup_->setPen(curve);
    QPen even(dark ? QColor(0xE0, 0xE0, 0xE0) : QColor(0x42, 0x42, 0x42));
    even.setStyle(Qt::DashLine);
    even.setWidthF(1.5);
    break_even_->setPen(even);
    chosen_->setColor(dark ? QColor(0xFF, 0xB7, 0x4D) : QColor(0xE6, 0x51, 0x00));
    chosen_->setMarkerSize(12);
    measured_->setColor(dark ? QColor(0x81, 0xC7, 0x84) : QColor(0x2E, 0x7D, 0x32));
    measured_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    measured_->setMarkerSize(12);
}

void SpeculativePanel::recompute() {
    const double a = alpha(), c = cost_ratio();
    const int g = gamma();
    alpha_value_->setText(QString::number(a, 'f', 2));
    gamma_value_->setText(QString::number(g));
    cost_value_->setText(QString::number(c, 'f', 2));
    QList<QPointF> curve;
    int best_gamma = 1;
    for (int gamma = 1; gamma <= kMaxGamma; ++gamma) {
        curve.append(QPointF(gamma, speculative_speedup(a, gamma, c)));
        if (curve.back().y() > curve[best_gamma - 1].y()) best_gamma = gamma;
    }
    speedup_->setName(tr("speed-up (\u03b1 = %1; c = %2)").arg(a, 0, 'f', 2).arg(c, 0, 'f', 2));
    speedup_->replace(curve);
    break_even_->replace(QList<QPointF>{QPointF(1, 1.0), QPointF(kMaxGamma, 1.0)});
    const double tokens = expected_tokens_per_verify(a, g);
    const double speedup = speculative_speedup(a, g, c);
    chosen_->replace(QList<QPointF>{QPointF(g, speedup)});
    chart()->setTitle(tr("Speculative decoding: %1\u00d7 at \u03b3 = %2").arg(speedup, 0, 'f', 2).arg(g));
    readout_->setText(tr("\u03b3 = %1: %2 tokens per verify for a cost of %3 target steps (\u03b3 \u00d7 c + 1) \u2192 "
                         "%4\u00d7 %5. Best \u03b3 for this \u03b1 and c: %6 (%7\u00d7).")
                          .arg(g)
                          .arg(tokens, 0, 'f', 2)
                          .arg(g * c + 1.0, 0, 'f', 2)
                          .arg(speedup, 0, 'f', 2)
                          .arg(speedup < 1.0 ? tr("(slower than plain decoding)") : tr("faster"))
                          .arg(best_gamma)
                          .arg(curve[best_gamma - 1].y(), 0, 'f', 2));
    fit_axes(kMaxGamma - 1, 1.0);
}

}  // namespace inferscope::ui
