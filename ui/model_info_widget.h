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

QString format_bytes(qint64 bytes);          // "12.3 MiB (12,902,400 bytes)"
QString format_bytes_compact(qint64 bytes);  // "12.3 MiB", "640 bytes"

}  // namespace inferscope::ui
