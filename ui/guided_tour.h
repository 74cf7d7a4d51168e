#pragma once
// Help › Guided Tour: a small window beside the main one that walks through the lessons in
// order, each step opening its tab and suggesting one thing to do there.
#include <QDialog>
#include <QList>
#include <functional>

#include "ui/tab_help.h"

class QLabel;
class QPushButton;

namespace inferscope::ui {

class GuidedTour : public QDialog {
    Q_OBJECT
public:
    // `open_tab` shows the tab whose objectName is the step's key.
    GuidedTour(QList<TabHelp> steps, std::function<void(const QString& key)> open_tab, QWidget* parent = nullptr);

    int step() const { return step_; }
    int step_count() const { return static_cast<int>(steps_.size()); }
    void go_to(int step);
    QString body_text() const;

private:
    QList<TabHelp> steps_;
    std::function<void(const QString&)> open_tab_;
    int step_ = 0;
    QLabel* heading_;
    QLabel* body_;
    QPushButton* back_;
    QPushButton* next_;
};

}  // namespace inferscope::ui
