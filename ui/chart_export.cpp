#include "ui/chart_export.h"

#include <algorithm>

#include <QDir>
#include <QFontMetrics>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPainter>
#include <QSaveFile>
#include <QScopeGuard>
#include <QSvgGenerator>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "ui/panels/chart_panel.h"

namespace inferscope::ui {
namespace {

constexpr qreal kPngScale = 2.0;
const QSize kDefaultExportSize(960, 600);

// The size to render at: the view's on-screen size, or a default for panels not on screen.
QSize render_size(const ChartPanel& panel) {
    const QChartView* view = panel.chart_view();
    return view->isVisible() ? view->size() : kDefaultExportSize;
}

void render_chart(const ChartPanel& panel, QPainter& painter, const QRectF& target) {
    QChartView* view = panel.chart_view();
    const QSize size = render_size(panel);
    if (view->isVisible()) {
        view->render(&painter, target, QRect(QPoint(0, 0), size));
        return;
    }
    // A view that is not on screen gets no resize events, so its chart keeps whatever
    // geometry it had: lay it out at the export size to render, then put it back as it was,
    // so that the live view is not left at the export size.
    const QSize live_size = view->size();
    const QRectF live_chart = panel.chart()->geometry();
    const QRectF live_scene = view->scene()->sceneRect();
    const auto restore = qScopeGuard([&] {
        view->resize(live_size);
        panel.chart()->setGeometry(live_chart);
        view->scene()->setSceneRect(live_scene);
    });
    view->resize(size);
    panel.chart()->setGeometry(QRectF(QPointF(0, 0), size));
    view->scene()->setSceneRect(QRectF(QPointF(0, 0), size));
    view->render(&painter, target, QRect(QPoint(0, 0), size));
}

bool has_points(const PlotData& data) {
    for (const PlotSeries& s : data.series) {
        if (!s.points.isEmpty()) return true;
    }
    return false;
}

// The chart at `size`, with the provenance caption in a strip below it when there is one.
QSize canvas_size(const ChartPanel& panel, const ExportProvenance* provenance) {
    const QSize size = render_size(panel);
    if (provenance == nullptr) return size;
    return {size.width(), size.height() + QFontMetrics(panel.font()).height() * 2};
}

void render_with_caption(const ChartPanel& panel, QPainter& painter, const ExportProvenance* provenance) {
    const QSize size = render_size(panel);
    render_chart(panel, painter, QRectF(QPointF(0, 0), size));
    if (provenance == nullptr) return;
    const int line = QFontMetrics(panel.font()).height();
    painter.setFont(panel.font());
    painter.setPen(panel.palette().color(QPalette::WindowText));
    const QRectF strip(QPointF(line / 2.0, size.height()), QSizeF(size.width() - line, line * 2.0));
    // The model's name gives way first: the fingerprint, backend, time and the empty mark stay whole.
    const bool empty = !has_points(panel.plot_data());
    const QFontMetrics metrics(panel.font());
    ExportProvenance shown = *provenance;
    shown.model.clear();
    const int room = std::max(static_cast<int>(strip.width()) / 4,
                              static_cast<int>(strip.width()) - metrics.horizontalAdvance(provenance_caption(shown, empty)) -
                                  4 * metrics.averageCharWidth());  // painting at 2x may set the text a little wider
    shown.model = metrics.elidedText(provenance->model, Qt::ElideRight, room);
    painter.drawText(strip, Qt::AlignLeft | Qt::AlignVCenter,
                     metrics.elidedText(provenance_caption(shown, empty), Qt::ElideRight, static_cast<int>(strip.width())));
}

QString csv_field(const QString& text) {
    if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) && !text.contains(QLatin1Char('\n'))) return text;
    QString quoted = text;
    quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

}  // namespace

QString save_file_atomically(const QString& path, const std::function<bool(QSaveFile&)>& write) {
    try {
        require_regular_file_target(path.toStdString());
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) return QObject::tr("%1: cannot open for writing: %2").arg(path, file.errorString());
    // QSaveFile::commit() renames even when its buffered bytes met a full disk on the way out,
    // so the buffer is flushed and the device's error checked first.
    if (!write(file) || !file.flush() || file.error() != QFileDevice::NoError) {
        const QString reason = file.errorString();
        file.cancelWriting();
        return QObject::tr("%1: writing failed: %2").arg(path, reason);
    }
    if (!file.commit()) return QObject::tr("%1: cannot save: %2").arg(path, file.errorString());
    return {};
}

QString export_format_suffix(ExportFormat format) {
    switch (format) {
        case ExportFormat::Png: return QStringLiteral("png");
        case ExportFormat::Svg: return QStringLiteral("svg");
        case ExportFormat::Csv: return QStringLiteral("csv");
        case ExportFormat::Json: return QStringLiteral("json");
    }
    return {};
}

QString provenance_caption(const ExportProvenance& p, bool empty) {
    QString caption = QObject::tr("%1 · fingerprint %2 · %3 · %4")
                          .arg(p.model, p.fingerprint, p.backend, p.time.toUTC().toString(Qt::ISODate));
    if (empty) caption += QObject::tr(" · no data: nothing measured yet");
    return caption;
}

QByteArray plot_data_to_csv(const PlotData& data, const ExportProvenance* provenance) {
    const bool named = !data.categories.isEmpty();  // a fourth column names each bar
    QString out;
    if (provenance != nullptr) {
        const auto one_line = [](QString text) { return text.replace(QLatin1Char('\n'), QLatin1Char(' ')); };
        out += QStringLiteral("# chart: %1\n# model: %2\n# fingerprint: %3\n# backend: %4\n# exported: %5\n")
                   .arg(one_line(data.title), one_line(provenance->model), provenance->fingerprint, provenance->backend,
                        provenance->time.toUTC().toString(Qt::ISODate));
        if (!has_points(data)) out += QStringLiteral("# no data: nothing measured yet\n");
    }
    out += QStringLiteral("series,%1,%2").arg(csv_field(data.x_label), csv_field(data.y_label));
    out += named ? QStringLiteral(",category\n") : QStringLiteral("\n");
    for (const PlotSeries& series : data.series) {
        for (const QPointF& p : series.points) {
            out += QStringLiteral("%1,%2,%3").arg(csv_field(series.name)).arg(p.x(), 0, 'g', 17).arg(p.y(), 0, 'g', 17);
            const auto index = static_cast<qsizetype>(p.x());
            const bool in_range = index >= 0 && index < data.categories.size();
            if (named) out += QLatin1Char(',') + csv_field(in_range ? data.categories[index] : QString());
            out += QLatin1Char('\n');
        }
    }
    return out.toUtf8();
}

QByteArray plot_data_to_json(const PlotData& data, const ExportProvenance* provenance) {
    QJsonArray series;
    for (const PlotSeries& s : data.series) {
        QJsonArray points;
        for (const QPointF& p : s.points) points.append(QJsonArray{p.x(), p.y()});
        series.append(QJsonObject{{QStringLiteral("name"), s.name}, {QStringLiteral("points"), points}});
    }
    QJsonObject root{{QStringLiteral("title"), data.title},
                     {QStringLiteral("x_label"), data.x_label},
                     {QStringLiteral("y_label"), data.y_label},
                     {QStringLiteral("series"), series}};
    if (!data.categories.isEmpty()) root.insert(QStringLiteral("categories"), QJsonArray::fromStringList(data.categories));
    if (provenance != nullptr) {
        root.insert(QStringLiteral("provenance"), QJsonObject{{QStringLiteral("model"), provenance->model},
                                                              {QStringLiteral("fingerprint"), provenance->fingerprint},
                                                              {QStringLiteral("backend"), provenance->backend},
                                                              {QStringLiteral("exported"), provenance->time.toUTC().toString(Qt::ISODate)},
                                                              {QStringLiteral("empty"), !has_points(data)}});
    }
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

QString export_chart(const ChartPanel& panel, const QString& path, ExportFormat format, const ExportProvenance* provenance) {
    switch (format) {
        case ExportFormat::Png:
            return save_file_atomically(path, [&](QSaveFile& file) {
                const QSize size = canvas_size(panel, provenance);
                QImage image(size * kPngScale, QImage::Format_ARGB32_Premultiplied);
                image.setDevicePixelRatio(kPngScale);
                image.fill(panel.palette().color(QPalette::Window));
                QPainter painter(&image);
                painter.setRenderHint(QPainter::Antialiasing);
                render_with_caption(panel, painter, provenance);
                painter.end();
                return image.save(&file, "PNG");
            });
        case ExportFormat::Svg:
            return save_file_atomically(path, [&](QSaveFile& file) {
                const QSize size = canvas_size(panel, provenance);
                QSvgGenerator generator;
                generator.setOutputDevice(&file);
                generator.setSize(size);
                generator.setViewBox(QRect(QPoint(0, 0), size));
                generator.setTitle(panel.plot_data().title);
                if (provenance != nullptr) generator.setDescription(provenance_caption(*provenance, !has_points(panel.plot_data())));
                QPainter painter(&generator);
                render_with_caption(panel, painter, provenance);
                return painter.end();
            });
        case ExportFormat::Csv:
            return save_file_atomically(path, [&](QSaveFile& file) {
                return file.write(plot_data_to_csv(panel.plot_data(), provenance)) >= 0;
            });
        case ExportFormat::Json:
            return save_file_atomically(path, [&](QSaveFile& file) {
                return file.write(plot_data_to_json(panel.plot_data(), provenance)) >= 0;
            });
    }
    return QObject::tr("unknown export format");
}

QStringList export_all(const QList<const ChartPanel*>& panels, const QString& dir, const ExportProvenance* provenance) {
    QStringList errors;
    if (!QDir().mkpath(dir)) return {QObject::tr("%1: cannot create the folder").arg(dir)};
    for (const ChartPanel* panel : panels) {
        for (ExportFormat format : {ExportFormat::Png, ExportFormat::Svg, ExportFormat::Csv, ExportFormat::Json}) {
            const QString path = QDir(dir).filePath(panel->export_name() + QLatin1Char('.') + export_format_suffix(format));
            const QString error = export_chart(*panel, path, format, provenance);
            if (!error.isEmpty()) errors << error;
        }
    }
    return errors;
}

}  // namespace inferscope::ui
