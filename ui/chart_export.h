#pragma once
// Writing charts to files: PNG (at twice the on-screen resolution), SVG, and the exact
// plotted data as CSV and JSON. Every write goes through save_file_atomically, so an existing
// file is either fully replaced or left untouched.
#include <QDateTime>
#include <QList>
#include <QString>
#include <QStringList>
#include <functional>

class QSaveFile;

namespace inferscope::ui {

class ChartPanel;
struct PlotData;

enum class ExportFormat { Png, Svg, Csv, Json };

// What produced an exported chart, so a file read later says where its numbers came from:
// a caption line under PNG/SVG charts, "# " lines before a CSV's header, a "provenance"
// object in JSON. A chart without data points says so in each.
struct ExportProvenance {
    QString model;        // the model's name and file
    QString fingerprint;  // GgufFile::content_fingerprint: the size and the first and last MiB
    QString backend;      // the backend and its threads
    QDateTime time;       // of the export, UTC
};
QString provenance_caption(const ExportProvenance& provenance, bool empty);

// Writes `path` through `write` into a QSaveFile: only a regular file (or a new one) is
// replaced, and only when every byte reached the disk. Returns an empty string on success,
// otherwise a message naming the file and the problem.
QString save_file_atomically(const QString& path, const std::function<bool(QSaveFile&)>& write);

QString export_format_suffix(ExportFormat format);  // "png", "svg", "csv", "json"

// Returns an empty string on success, otherwise a message naming the file and the problem.
QString export_chart(const ChartPanel& panel, const QString& path, ExportFormat format,
                     const ExportProvenance* provenance = nullptr);

// Writes <dir>/<export name>.<png|svg|csv|json> for every panel (creating dir); returns the
// error messages (empty when everything was written).
QStringList export_all(const QList<const ChartPanel*>& panels, const QString& dir,
                       const ExportProvenance* provenance = nullptr);

// The text forms, exposed for tests.
QByteArray plot_data_to_csv(const PlotData& data, const ExportProvenance* provenance = nullptr);
QByteArray plot_data_to_json(const PlotData& data, const ExportProvenance* provenance = nullptr);

}  // namespace inferscope::ui
