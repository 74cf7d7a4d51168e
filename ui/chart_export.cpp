#include "ui/chart_export.h"

#include <QDir>
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

QByteArray plot_data_to_csv(const PlotData& data) {
    const bool named = !data.categories.isEmpty();  // a fourth column names each bar
    QString out = QStringLiteral("series,%1,%2").arg(csv_field(data.x_label), csv_field(data.y_label));
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

QByteArray plot_data_to_json(const PlotData& data) {
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
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

QString export_chart(const ChartPanel& panel, const QString& path, ExportFormat format) {
    switch (format) {
        case ExportFormat::Png:
            return save_file_atomically(path, [&](QSaveFile& file) {
                const QSize size = render_size(panel);
                QImage image(size * kPngScale, QImage::Format_ARGB32_Premultiplied);
                image.setDevicePixelRatio(kPngScale);
                image.fill(panel.palette().color(QPalette::Window));
                QPainter painter(&image);
                painter.setRenderHint(QPainter::Antialiasing);
                render_chart(panel, painter, QRectF(QPointF(0, 0), size));
                painter.end();
                return image.save(&file, "PNG");
            });
        case ExportFormat::Svg:
            return save_file_atomically(path, [&](QSaveFile& file) {
                const QSize size = render_size(panel);
                QSvgGenerator generator;
                generator.setOutputDevice(&file);
                generator.setSize(size);
                generator.setViewBox(QRect(QPoint(0, 0), size));
                generator.setTitle(panel.plot_data().title);
                QPainter painter(&generator);
                render_chart(panel, painter, QRectF(QPointF(0, 0), size));
                return painter.end();
            });
        case ExportFormat::Csv:
            return save_file_atomically(path, [&](QSaveFile& file) {
                return file.write(plot_data_to_csv(panel.plot_data())) >= 0;
            });
        case ExportFormat::Json:
            return save_file_atomically(path, [&](QSaveFile& file) {
                return file.write(plot_data_to_json(panel.plot_data())) >= 0;
            });
    }
    return QObject::tr("unknown export format");
}

QStringList export_all(const QList<const ChartPanel*>& panels, const QString& dir) {
    QStringList errors;
    if (!QDir().mkpath(dir)) return {QObject::tr("%1: cannot create the folder").arg(dir)};
    for (const ChartPanel* panel : panels) {
        for (ExportFormat format : {ExportFormat::Png, ExportFormat::Svg, ExportFormat::Csv, ExportFormat::Json}) {
            const QString path = QDir(dir).filePath(panel->export_name() + QLatin1Char('.') + export_format_suffix(format));
            const QString error = export_chart(*panel, path, format);
            if (!error.isEmpty()) errors << error;
        }
    }
    return errors;
}

}  // namespace inferscope::ui
