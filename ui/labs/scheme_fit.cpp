#include "ui/labs/scheme_fit.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QStandardItemModel>

#include "engine/core/error.h"
#include "engine/formats/ggml_type.h"
#include "engine/quant/scheme.h"

namespace inferscope::ui {

QList<int> matrix_row_lengths(const ModelSummary& model) {
    QList<int> lengths;
    for (int length : {model.config.n_embd, model.config.n_head * model.config.head_dim, model.config.n_ff}) {
        if (length > 0 && !lengths.contains(length)) lengths.append(length);
    }
    return lengths;
}

QString block_misfit(qint64 block, const QList<int>& lengths) {
    for (int length : lengths) {
        if (length % block != 0) {
            return QCoreApplication::translate("SchemeFit", "This model has rows of %1 weights, not a multiple of %2.")
                .arg(length)
                .arg(block);
        }
    }
    return {};
}

QString scheme_misfit(const QString& text, const QList<int>& lengths) {
    QuantScheme scheme;
    try {
        scheme = parse_quant_scheme(text.toStdString());
    } catch (const Error&) {
        return {};
    }
    if (scheme.family == SchemeFamily::Gguf) return block_misfit(ggml_type_traits(scheme.gguf_type).block_elements, lengths);
    if (scheme.family == SchemeFamily::Nf4 || scheme.granularity == Granularity::Group) return block_misfit(scheme.block, lengths);
    return {};
}

void set_item_enabled(QComboBox& box, int index, const QString& misfit) {
    QStandardItem* item = qobject_cast<QStandardItemModel*>(box.model())->item(index);
    item->setEnabled(misfit.isEmpty());
    item->setToolTip(misfit);
}

bool item_enabled(const QComboBox& box, int index) {
    return qobject_cast<QStandardItemModel*>(box.model())->item(index)->isEnabled();
}

void select_last_enabled(QComboBox& box) {
    if (box.currentIndex() < 0 || item_enabled(box, box.currentIndex())) return;
    for (int i = box.count() - 1; i >= 0; --i) {
        if (item_enabled(box, i)) {
            box.setCurrentIndex(i);
            return;
        }
    }
}

}  // namespace inferscope::ui
