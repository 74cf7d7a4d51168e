#pragma once
// Which quantization schemes a loaded model's matrices can take: a scheme's block or group
// must divide every row (stories260K's rows hold 64 and 172 weights). The labs disable the
// choices that cannot run, with the reason as the item's tooltip.
#include <QList>
#include <QString>

#include "ui/engine_types.h"

class QComboBox;

namespace inferscope::ui {

// The lengths of the rows of the model's 2-D weights: the inputs of q/k/v/gate/up, of the
// attention output and of the FFN down-projection.
QList<int> matrix_row_lengths(const ModelSummary& model);
// Empty when `block` divides every length; otherwise why not.
QString block_misfit(qint64 block, const QList<int>& lengths);
// Empty when the scheme `text` (parse_quant_scheme's grammar) fits every length; otherwise
// why not. A text that does not parse is not judged here (empty).
QString scheme_misfit(const QString& text, const QList<int>& lengths);

void set_item_enabled(QComboBox& box, int index, const QString& misfit);
bool item_enabled(const QComboBox& box, int index);
// Moves the selection off a disabled item to the last enabled one (the largest group size,
// the finest granularity).
void select_last_enabled(QComboBox& box);

}  // namespace inferscope::ui
