#pragma once
// Numbers as the panels show them: a given count of significant digits written out in full,
// never in e-notation, which readers misread; only values too large or too small to write out
// take the form "m × 10^k".
#include <QString>
#include <QtGlobal>

namespace inferscope::ui {

QString format_number(double value, int significant_digits = 4);

// How far `value` moved from `reference`, as a reader takes it in: "+15.1 %" within a
// tenfold change, "×1200" beyond it (a quantized model whose perplexity exploded), "not
// finite" when either is.
QString format_relative_change(double value, double reference);

QString format_bytes(qint64 bytes);          // "12.3 MiB (12,902,400 bytes)"
QString format_bytes_compact(qint64 bytes);  // "12.3 MiB", "640 bytes"

// The binary unit a chart axis shows byte counts up to `max_bytes` in: the largest of bytes,
// KiB, MiB, GiB and TiB in which the maximum is at least 1.
struct ByteUnit {
    double bytes = 1;  // bytes in one unit
    QString name;      // "bytes", "KiB", …
};
ByteUnit byte_unit_for(double max_bytes);

}  // namespace inferscope::ui
