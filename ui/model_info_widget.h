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

private:
    QFormLayout* form_;
};

QString format_bytes(qint64 bytes);  // "12.3 MiB (12,902,400 bytes)"

}  // namespace inferscope::ui
