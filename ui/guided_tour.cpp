#include "ui/guided_tour.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>
#include <algorithm>

namespace inferscope::ui {

GuidedTour::GuidedTour(QList<TabHelp> steps, std::function<void(const QString& key)> open_tab, QWidget* parent)
    : QDialog(parent),
      steps_(std::move(steps)),
      open_tab_(std::move(open_tab)),
      heading_(new QLabel()),
      body_(new QLabel()),
      back_(new QPushButton(tr("&Back"))),
      next_(new QPushButton(tr("&Next"))) {
    setWindowTitle(tr("Guided tour"));
    setModal(false);
    body_->setWordWrap(true);
    body_->setTextFormat(Qt::RichText);
    body_->setMinimumWidth(360);
    auto* close = new QPushButton(tr("&Close"));
    auto* buttons = new QHBoxLayout();
    buttons->addWidget(back_);
    buttons->addWidget(next_);
    buttons->addStretch(1);
    buttons->addWidget(close);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(heading_);
    layout->addWidget(body_, 1);
    layout->addLayout(buttons);
    connect(back_, &QPushButton::clicked, this, [this] { go_to(step_ - 1); });
    connect(next_, &QPushButton::clicked, this, [this] { go_to(step_ + 1); });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    go_to(0);
}

void GuidedTour::go_to(int step) {
    if (steps_.isEmpty()) return;
    step_ = std::clamp(step, 0, step_count() - 1);
    const TabHelp& s = steps_[step_];
    heading_->setText(tr("<b>Lesson %1 of %2: %3</b>").arg(step_ + 1).arg(step_count()).arg(s.title.toHtmlEscaped()));
    body_->setText(body_text());
    back_->setEnabled(step_ > 0);
    next_->setEnabled(step_ + 1 < step_count());
    if (open_tab_) open_tab_(s.key);
}

QString GuidedTour::body_text() const {
    const TabHelp& s = steps_[step_];
    return tr("<p>%1</p><p><b>Try this:</b> %2</p>").arg(s.what.toHtmlEscaped(), s.try_this.toHtmlEscaped());
}

}  // namespace inferscope::ui
