#include "ui/generation_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/chat/chat_template.h"
#include "engine/core/error.h"
#include "ui/chat_messages.h"
#include "ui/model_info_widget.h"
#include "ui/number_format.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {
namespace {

QDoubleSpinBox* double_spin(double min, double max, double step, double value, int decimals = 2) {
    auto* spin = new QDoubleSpinBox();
    spin->setRange(min, max);
    spin->setSingleStep(step);
    spin->setDecimals(decimals);
    spin->setValue(value);
    return spin;
}

QSpinBox* int_spin(int min, int max, int value) {
    auto* spin = new QSpinBox();
    spin->setRange(min, max);
    spin->setValue(value);
    return spin;
}

}  // namespace

GenerationPanel::GenerationPanel(QWidget* parent)
    : QWidget(parent),
      prompt_(new QPlainTextEdit()),
      output_(new QPlainTextEdit()),
      n_predict_(int_spin(1, 8192, 64)),
      temperature_(double_spin(0.0, 5.0, 0.1, 0.8)),
      top_k_(int_spin(0, 100000, 40)),
      top_p_(double_spin(0.0, 1.0, 0.05, 0.95)),
      min_p_(double_spin(0.0, 1.0, 0.01, 0.05)),
      repeat_penalty_(double_spin(0.5, 3.0, 0.05, 1.0)),
      seed_(int_spin(0, 2147483647, 42)),
      compare_recompute_(new QCheckBox(tr("Also run without KV cache (recompute every step) and compare"))),
      generate_(new QPushButton(tr("Generate"))),
      stop_(new QPushButton(tr("Stop"))),
      chat_(new QCheckBox(tr("&Conversation"))),
      system_prompt_(new QLineEdit()),
      new_chat_(new QPushButton(tr("&New chat"))),
      show_rendered_(new QPushButton(tr("Rendered prompt…"))),
      chat_status_(new QLabel()) {
    prompt_->setPlaceholderText(tr("Type a prompt, then press Ctrl+Enter"));
    prompt_->setPlainText(tr("Once upon a time"));
    // Small minimums: in a short window the model's details and these boxes share what is left.
    const int line = prompt_->fontMetrics().lineSpacing();
    prompt_->setMinimumHeight(line * 3);
    prompt_->setMaximumHeight(line * 6);
    output_->setMinimumHeight(line * 4);
    output_->setReadOnly(true);
    output_->setPlaceholderText(tr("Generated text appears here as it is produced."));
    generate_->setToolTip(tr("Generate (Ctrl+Enter)"));
    stop_->setToolTip(tr("Stop (Esc)"));
    connect(generate_, &QPushButton::clicked, this, &GenerationPanel::generate_requested);
    connect(stop_, &QPushButton::clicked, this, &GenerationPanel::stop_requested);

    auto* buttons = new QHBoxLayout();
    buttons->addWidget(generate_);
    buttons->addWidget(stop_);
    buttons->addStretch();

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(build_examples());
    layout->addWidget(prompt_);
    layout->addWidget(build_chat_controls());
    layout->addWidget(build_sampling_controls());
    layout->addLayout(buttons);
    layout->addWidget(build_stats());
    layout->addWidget(new QLabel(tr("Output")));
    layout->addWidget(output_, 1);
    set_running(false);
    update_stats();
    connect(prompt_, &QPlainTextEdit::textChanged, this, [this] { Q_EMIT lab_prompt_changed(lab_prompt()); });
}

// Conversation mode (models with a chat template): a system prompt, New chat, and the text
// the template renders, shown on request.
QWidget* GenerationPanel::build_chat_controls() {
    auto* box = new QGroupBox(tr("Chat"));
    auto* grid = new QGridLayout(box);
    chat_->setToolTip(tr("Render the prompt as the next user message with the model's chat template; off: raw "
                         "completion of the text as it is"));
    system_prompt_->setPlaceholderText(tr("System prompt (optional)"));
    system_prompt_->setToolTip(tr("Sent first in every turn of the conversation"));
    new_chat_->setToolTip(tr("Forget the turns so far"));
    show_rendered_->setToolTip(tr("The exact text and token count the model was fed in the last turn"));
    wrap_within_column(chat_status_);
    grid->addWidget(chat_, 0, 0);
    grid->addWidget(new_chat_, 0, 1);
    grid->addWidget(show_rendered_, 0, 2);
    grid->addWidget(system_prompt_, 1, 0, 1, 3);
    grid->addWidget(chat_status_, 2, 0, 1, 3);
    connect(new_chat_, &QPushButton::clicked, this, &GenerationPanel::new_chat);
    connect(show_rendered_, &QPushButton::clicked, this, &GenerationPanel::show_rendered_prompt);
    connect(chat_, &QCheckBox::toggled, this, [this] {
        new_chat();
        system_prompt_->setEnabled(chat_mode());
    });
    connect(system_prompt_, &QLineEdit::textChanged, this, [this] { Q_EMIT lab_prompt_changed(lab_prompt()); });
    return box;
}

void GenerationPanel::set_chat_template(const ModelSummary& model) {
    // The same model again (new threads, another backend): the conversation goes on.
    if (chat_model_known_ && model.path == chat_model_path_ && model.chat_template == chat_template_ &&
        model.weights == chat_model_weights_) {
        return;
    }
    chat_model_known_ = true;
    chat_model_path_ = model.path;
    chat_model_weights_ = model.weights;
    chat_template_ = model.chat_template;
    bos_text_ = model.bos_text;
    eos_text_ = model.eos_text;
    const bool has_template = !chat_template_.isEmpty();
    chat_->setEnabled(has_template);
    chat_->setChecked(has_template);
    system_prompt_->setEnabled(has_template);
    chat_status_->setText(has_template ? tr("The model has a chat template (%1 family).").arg(model.chat_family)
                                       : tr("This model has no chat template: prompts are completed as they are."));
    new_chat();
}

bool GenerationPanel::chat_mode() const { return chat_->isChecked() && !chat_template_.isEmpty(); }

void GenerationPanel::new_chat() {
    history_.clear();
    last_rendered_.clear();
    last_rendered_tokens_ = 0;
    new_chat_->setEnabled(false);
    show_rendered_->setEnabled(false);
    Q_EMIT lab_prompt_changed(lab_prompt());
}

QVector<ChatMessageText> GenerationPanel::request_history() const {
    QVector<ChatMessageText> messages;
    if (!system_prompt_->text().trimmed().isEmpty()) messages.push_back({QStringLiteral("system"), system_prompt_->text()});
    messages += history_;
    return messages;
}

QString GenerationPanel::lab_prompt() const {
    if (!chat_mode()) return prompt_->toPlainText();
    chat::ChatTemplateInputs inputs;
    inputs.messages = chat_messages_json(request_history(), prompt_->toPlainText());
    inputs.add_generation_prompt = true;
    inputs.bos_token = bos_text_.toStdString();
    inputs.eos_token = eos_text_.toStdString();
    try {
        return QString::fromStdString(chat::render_chat_template(chat_template_.toStdString(), inputs));
    } catch (const Error&) {
        return prompt_->toPlainText();  // the error is reported when the turn is generated
    }
}

void GenerationPanel::show_rendered_prompt() {
    QDialog dialog(this);
    dialog.setWindowTitle(tr("Rendered prompt"));
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(new QLabel(tr("The last turn fed the model %n token(s) of this text:", nullptr, last_rendered_tokens_)));
    auto* text = new QPlainTextEdit(last_rendered_);
    text->setReadOnly(true);
    layout->addWidget(text, 1);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(640, 420);
    dialog.exec();
}

// The prompt label and a list of example prompts (shipped in the resources) to start from.
QWidget* GenerationPanel::build_examples() {
    auto* row = new QWidget();
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* label = new QLabel(tr("&Prompt"));
    label->setBuddy(prompt_);
    auto* examples = new QComboBox();
    examples->addItem(tr("Example prompts…"));
    QFile file(QStringLiteral(":/inferscope/prompts/examples.txt"));
    if (file.open(QIODevice::ReadOnly | QIODevice::Text)) {
        for (const QByteArray& line : file.readAll().split('\n')) {
            if (!line.trimmed().isEmpty()) examples->addItem(QString::fromUtf8(line));
        }
    }
    connect(examples, &QComboBox::activated, this, [this, examples](int index) {
        if (index > 0) prompt_->setPlainText(examples->itemText(index));
        examples->setCurrentIndex(0);
    });
    layout->addWidget(label);
    layout->addStretch();
    layout->addWidget(examples);
    return row;
}

QWidget* GenerationPanel::build_sampling_controls() {
    auto* box = new QGroupBox(tr("Sampling"));
    auto* grid = new QGridLayout(box);
    const auto add = [grid](int row, int column, const QString& label, QWidget* field, const QString& tip) {
        auto* text = new QLabel(label);
        text->setBuddy(field);
        field->setToolTip(tip);
        grid->addWidget(text, row, column * 2, Qt::AlignRight);
        grid->addWidget(field, row, column * 2 + 1);
    };
    add(0, 0, tr("&Tokens:"), n_predict_, tr("Tokens to generate"));
    add(0, 1, tr("T&emperature:"), temperature_, tr("0 = greedy (always the most likely token)"));
    add(1, 0, tr("Top-&k:"), top_k_, tr("Keep the k most likely tokens (0 = off)"));
    add(1, 1, tr("Top-&p:"), top_p_, tr("Keep the smallest set whose probability reaches p (1 = off)"));
    add(2, 0, tr("&Min-p:"), min_p_, tr("Drop tokens below min-p x the top probability (0 = off)"));
    add(2, 1, tr("&Repeat penalty:"), repeat_penalty_, tr("Penalty on tokens already in the last 64 (1 = off)"));
    add(3, 0, tr("&Seed:"), seed_, tr("Random seed of the sampler"));
    grid->addWidget(compare_recompute_, 4, 0, 1, 4);
    return box;
}

QWidget* GenerationPanel::build_stats() {
    auto* box = new QWidget();
    auto* form = new QFormLayout(box);
    form->setContentsMargins(0, 0, 0, 0);
    ttft_ = new QLabel();
    speed_ = new QLabel();
    context_ = new QLabel();
    kv_bytes_ = new QLabel();
    for (QLabel* label : {ttft_, speed_, context_, kv_bytes_}) wrap_within_column(label);
    form->addRow(tr("Time to first token:"), ttft_);
    form->addRow(tr("Decode speed:"), speed_);
    form->addRow(tr("Context length:"), context_);
    form->addRow(tr("KV cache:"), kv_bytes_);
    return box;
}

GenerationRequest GenerationPanel::request() const {
    GenerationRequest r;
    r.prompt = prompt_->toPlainText();
    r.n_predict = n_predict_->value();
    r.sampling.temperature = temperature_->value();
    r.sampling.top_k = top_k_->value();
    r.sampling.top_p = top_p_->value();
    r.sampling.min_p = min_p_->value();
    r.sampling.repeat_penalty = repeat_penalty_->value();
    r.sampling.seed = static_cast<quint64>(seed_->value());
    r.compare_recompute = compare_recompute_->isChecked();
    r.chat = chat_mode();
    if (r.chat) r.history = request_history();
    return r;
}

void GenerationPanel::set_prompt(const QString& prompt) { prompt_->setPlainText(prompt); }
void GenerationPanel::set_n_predict(int n) { n_predict_->setValue(n); }

void GenerationPanel::set_running(bool running) {
    running_ = running;
    generate_->setEnabled(!running && model_ready_);
    stop_->setEnabled(running);
}

void GenerationPanel::set_model_ready(bool ready) {
    model_ready_ = ready;
    set_running(running_);
}

void GenerationPanel::save_settings(QSettings& settings) const {
    settings.setValue(QStringLiteral("generation/prompt"), prompt_->toPlainText());
    settings.setValue(QStringLiteral("generation/n_predict"), n_predict_->value());
    settings.setValue(QStringLiteral("generation/temperature"), temperature_->value());
    settings.setValue(QStringLiteral("generation/top_k"), top_k_->value());
    settings.setValue(QStringLiteral("generation/top_p"), top_p_->value());
    settings.setValue(QStringLiteral("generation/min_p"), min_p_->value());
    settings.setValue(QStringLiteral("generation/repeat_penalty"), repeat_penalty_->value());
    settings.setValue(QStringLiteral("generation/seed"), seed_->value());
    settings.setValue(QStringLiteral("generation/compare_recompute"), compare_recompute_->isChecked());
}

void GenerationPanel::restore_settings(const QSettings& settings) {
    prompt_->setPlainText(settings.value(QStringLiteral("generation/prompt"), prompt_->toPlainText()).toString());
    n_predict_->setValue(settings.value(QStringLiteral("generation/n_predict"), n_predict_->value()).toInt());
    temperature_->setValue(settings.value(QStringLiteral("generation/temperature"), temperature_->value()).toDouble());
    top_k_->setValue(settings.value(QStringLiteral("generation/top_k"), top_k_->value()).toInt());
    top_p_->setValue(settings.value(QStringLiteral("generation/top_p"), top_p_->value()).toDouble());
    min_p_->setValue(settings.value(QStringLiteral("generation/min_p"), min_p_->value()).toDouble());
    repeat_penalty_->setValue(settings.value(QStringLiteral("generation/repeat_penalty"), repeat_penalty_->value()).toDouble());
    seed_->setValue(settings.value(QStringLiteral("generation/seed"), seed_->value()).toInt());
    compare_recompute_->setChecked(settings.value(QStringLiteral("generation/compare_recompute"), false).toBool());
}

void GenerationPanel::start_output(const QString& prompt_text) {
    if (chat_mode()) {
        pending_user_message_ = prompt_text;
        const QString turn = tr("You: %1\n\nAssistant: ").arg(prompt_text);
        if (history_.isEmpty()) {
            output_->setPlainText(turn);
        } else {
            output_->moveCursor(QTextCursor::End);
            output_->insertPlainText(QStringLiteral("\n\n") + turn);
        }
    } else {
        output_->setPlainText(prompt_text);
    }
    reset_figures();
}

void GenerationPanel::clear_results() {
    output_->clear();
    reset_figures();
}

void GenerationPanel::reset_figures() {
    prefill_ms_ = decode_ms_ = 0;
    decode_steps_ = 0;
    report_ms_per_token_ = -1;
    first_token_seen_ = false;
    ttft_ms_ = -1;
    context_->clear();
    kv_bytes_->clear();
    kv_bytes_->setToolTip(QString());
    update_stats();
}

void GenerationPanel::append_output(const QString& text) {
    if (!first_token_seen_) {
        first_token_seen_ = true;
        ttft_ms_ = prefill_ms_;  // refined by the report when the generation ends
        update_stats();
    }
    output_->moveCursor(QTextCursor::End);
    output_->insertPlainText(text);
}

void GenerationPanel::add_steps(const QVector<StepRecord>& steps) {
    const StepRecord* last = nullptr;
    for (const StepRecord& step : steps) {
        if (step.recompute) continue;
        if (step.phase == QStringLiteral("decode")) {
            decode_ms_ += step.wall_ms;
            ++decode_steps_;
        } else {
            prefill_ms_ += step.wall_ms;
        }
        last = &step;
    }
    if (last == nullptr) return;
    context_->setText(tr("%1 tokens").arg(last->context_length));
    kv_bytes_->setText(tr("%1 in use, %2 reserved")
                           .arg(format_bytes_compact(last->kv_bytes_in_use), format_bytes_compact(last->kv_bytes_reserved)));
    kv_bytes_->setToolTip(tr("%1 bytes in use, %2 bytes reserved")
                              .arg(QLocale().toString(last->kv_bytes_in_use), QLocale().toString(last->kv_bytes_reserved)));
    update_stats();
}

void GenerationPanel::show_report(const GenerationReport& report) {
    if (report.recompute) return;
    ttft_ms_ = report.ttft_ms;
    if (report.decode_ms_per_token > 0) report_ms_per_token_ = report.decode_ms_per_token;
    update_stats();
    if (report.rendered_prompt.isEmpty()) return;  // raw completion
    history_.push_back({QStringLiteral("user"), pending_user_message_});
    history_.push_back({QStringLiteral("assistant"), report.reply});
    last_rendered_ = report.rendered_prompt;
    last_rendered_tokens_ = report.n_prompt;
    new_chat_->setEnabled(true);
    show_rendered_->setEnabled(true);
    chat_status_->setText(tr("Turn %1: %2 prompt tokens, %3 of them from the KV cache of earlier turns.")
                              .arg(history_.size() / 2)
                              .arg(report.n_prompt)
                              .arg(report.n_prompt_cached));
    prompt_->clear();
}

QString GenerationPanel::decode_speed_text() const { return speed_->text(); }

void GenerationPanel::update_stats() {
    ttft_->setText(ttft_ms_ < 0 ? tr("—") : tr("%1 ms").arg(ttft_ms_, 0, 'f', 1));
    if (decode_steps_ == 0 && report_ms_per_token_ < 0) {
        speed_->setText(tr("—"));
    } else {
        // The run's report, which the latency chart's title shows too, replaces the live estimate.
        const double ms_per_token = report_ms_per_token_ > 0 ? report_ms_per_token_ : decode_ms_ / decode_steps_;
        speed_->setText(tr("%1 tokens/s (%2 ms/token)").arg(1000.0 / ms_per_token, 0, 'f', 1).arg(ms_per_token, 0, 'f', 2));
    }
}

}  // namespace inferscope::ui
