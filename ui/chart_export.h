#pragma once
// Writing charts to files: PNG (at twice the on-screen resolution), SVG, and the exact
// plotted data as CSV and JSON. Every write goes through save_file_atomically, so an existing
// file is either fully replaced or left untouched.
#include <QList>
#include <QString>
#include <QStringList>
#include <functional>

class QSaveFile;

namespace inferscope::ui {

class ChartPanel;
struct PlotData;

enum class ExportFormat { Png, Svg, Csv, Json };

// Writes `path` through `write` into a QSaveFile: only a regular file (or a new one) is
// replaced, and only when every byte reached the disk. Returns an empty string on success,
// otherwise a message naming the file and the problem.
QString save_file_atomically(const QString& path, const std::function<bool(QSaveFile&)>& write);

QString export_format_suffix(ExportFormat format);  // "png", "svg", "csv", "json"

// Returns an empty string on success, otherwise a message naming the file and the problem.
QString export_chart(const ChartPanel& panel, const QString& path, ExportFormat format);

// Writes <dir>/<export name>.<png|svg|csv|json> for every panel (creating dir); returns the
// error messages (empty when everything was written).
QStringList export_all(const QList<const ChartPanel*>& panels, const QString& dir);

// The text forms, exposed for tests.
QByteArray plot_data_to_csv(const PlotData& data);
QByteArray plot_data_to_json(const PlotData& data);

}  // namespace inferscope::ui
