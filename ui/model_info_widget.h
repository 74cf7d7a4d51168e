#pragma once
// The model's metadata: what the header says (shown before the weights are touched) and,
// once loaded, the tokenizer, backend and context size.
#include <QWidget>

#include "ui/engine_types.h"

class QLabel;
class QFormLayout;

namespace inferscope::ui {

class ModelInfoWidget : public QWidget {
    Q_OBJECT
public:
    explicit ModelInfoWidget(QWidget* parent = nullptr);
    void show_summary(const ModelSummary& summary, bool loaded);
    // No model: what to do, after `problem` (why the last load failed) when there is one.
    void show_empty(const QString& problem = QString());
    QString empty_text() const { return empty_text_; }

private:
    QFormLayout* form_;
    QString empty_text_;  // shown while no model is loaded; empty otherwise
};


}  // namespace inferscope::ui
