#include "ui/model_info_widget.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLocale>

#include "ui/number_format.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {

ModelInfoWidget::ModelInfoWidget(QWidget* parent) : QWidget(parent), form_(new QFormLayout(this)) {
    form_->setLabelAlignment(Qt::AlignRight);
    form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
}

void ModelInfoWidget::show_empty(const QString& problem) {
    while (form_->rowCount() > 0) form_->removeRow(0);
    empty_text_ = tr("No model is loaded. Open a GGUF file with File › Open (Ctrl+O) or drop one on the window, or "
                     "choose File › Open Built-in Model › stories260K to start at once.");
    if (!problem.isEmpty()) empty_text_ = problem + QLatin1Char(' ') + empty_text_;
    auto* label = new QLabel(empty_text_);
    label->setTextFormat(Qt::PlainText);
    label->setWordWrap(true);
    form_->addRow(label);
}

void ModelInfoWidget::show_summary(const ModelSummary& s, bool loaded) {
    empty_text_.clear();
    while (form_->rowCount() > 0) form_->removeRow(0);
    const QLocale locale;
    const auto add = [this](const QString& label, const QString& value) {
        auto* field = new QLabel(value);
        field->setTextFormat(Qt::PlainText);  // names come from the file: never rendered as HTML
        field->setTextInteractionFlags(Qt::TextSelectableByMouse);
        wrap_within_column(field);
        form_->addRow(label, field);
    };
    QString name = s.name.isEmpty() ? QFileInfo(s.path).fileName() : s.name;
    if (s.synthetic) name += tr("  [synthetic: random weights]");
    if (!loaded) name += tr("  (loading…)");
    add(tr("Model:"), name);
    if (!s.builtin) add(tr("File:"), tr("%1, %2").arg(QFileInfo(s.path).fileName(), format_bytes(s.file_bytes)));
    add(tr("Architecture:"), s.architecture);
    add(tr("Parameters:"), locale.toString(s.parameters));
    if (s.config.n_layer > 0) {
        add(tr("Layers / width:"), tr("%1 layers, n_embd %2, FFN %3").arg(s.config.n_layer).arg(s.config.n_embd).arg(s.config.n_ff));
        add(tr("Heads:"), tr("%1 query, %2 KV (head dim %3)").arg(s.config.n_head).arg(s.config.n_head_kv).arg(s.config.head_dim));
        add(tr("KV bytes/token:"), tr("%1 (f16)").arg(locale.toString(s.kv_bytes_per_token(s.config.n_head_kv))));
        if (s.config.local_layer_count() > 0) {
            add(tr("Sliding window:"), tr("%1 of %2 layers attend to the last %3 tokens")
                                           .arg(s.config.local_layer_count())
                                           .arg(s.config.n_layer)
                                           .arg(s.config.sliding_window));
        }
        add(tr("Vocabulary:"), locale.toString(s.config.n_vocab));
        add(tr("Context:"), loaded ? tr("%1 tokens (model: %2)").arg(s.context_size).arg(s.config.context_length)
                                   : locale.toString(s.config.context_length));
    }
    add(tr("Tensor types:"), s.tensor_types.join(QStringLiteral(", ")));
    if (loaded) {
        add(tr("Tokenizer:"), s.tokenizer);
        add(tr("Chat template:"), s.chat_template.isEmpty() ? tr("none (raw completion)") : tr("%1 family").arg(s.chat_family));
        add(tr("Backend:"), s.backend);
        if (!s.weights.isEmpty()) add(tr("Weights:"), s.weights);
        if (!s.load_warnings.isEmpty()) add(tr("Warnings:"), s.load_warnings.join(QLatin1Char('\n')));
    }
}

}  // namespace inferscope::ui
