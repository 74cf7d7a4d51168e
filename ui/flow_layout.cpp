#include "ui/flow_layout.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QStyle>
#include <QWidget>
#include <algorithm>

namespace inferscope::ui {

FlowLayout::FlowLayout(QWidget* parent) : QLayout(parent) {}

FlowLayout::~FlowLayout() {
    while (QLayoutItem* item = takeAt(0)) delete item;
}

void FlowLayout::addItem(QLayoutItem* item) { items_.append(item); }

QLayoutItem* FlowLayout::takeAt(int index) {
    if (index < 0 || index >= items_.size()) return nullptr;
    return items_.takeAt(index);
}

QWidget* labelled_field(const QString& text, QWidget* field, QWidget* extra) {
    auto* pair = new QWidget();
    auto* row = new QHBoxLayout(pair);
    row->setContentsMargins(0, 0, 0, 0);
    auto* label = new QLabel(text);
    label->setBuddy(field);
    row->addWidget(label);
    row->addWidget(field, 1);
    if (extra != nullptr) row->addWidget(extra);
    return pair;
}

int FlowLayout::gap() const {
    if (spacing() >= 0) return spacing();
    const QWidget* parent = parentWidget();
    return parent != nullptr ? parent->style()->pixelMetric(QStyle::PM_LayoutHorizontalSpacing, nullptr, parent) : 6;
}

int FlowLayout::heightForWidth(int width) const { return arrange(QRect(0, 0, width, 0), false); }

QSize FlowLayout::minimumSize() const {
    QSize size;
    for (const QLayoutItem* item : items_) {
        if (!item->isEmpty()) size = size.expandedTo(item->minimumSize());
    }
    const QMargins m = contentsMargins();
    return size + QSize(m.left() + m.right(), m.top() + m.bottom());
}

QSize FlowLayout::sizeHint() const {
    int width = 0, height = 0, visible = 0;
    for (const QLayoutItem* item : items_) {
        if (item->isEmpty()) continue;
        width += item->sizeHint().width();
        height = std::max(height, item->sizeHint().height());
        ++visible;
    }
    const QMargins m = contentsMargins();
    return {width + gap() * std::max(0, visible - 1) + m.left() + m.right(), height + m.top() + m.bottom()};
}

void FlowLayout::setGeometry(const QRect& rect) {
    QLayout::setGeometry(rect);
    arrange(rect, true);
}

int FlowLayout::arrange(const QRect& rect, bool apply) const {
    const QRect area = rect.marginsRemoved(contentsMargins());
    const int spacing = gap();
    int y = area.y();
    QList<QLayoutItem*> line;
    int line_width = 0, line_height = 0;
    const auto place_line = [&] {
        int x = area.x();
        for (QLayoutItem* item : line) {
            const QSize size = item->sizeHint();
            if (apply) item->setGeometry(QRect(QPoint(x, y + (line_height - size.height()) / 2), size));
            x += size.width() + spacing;
        }
        y += line_height + spacing;
        line.clear();
        line_width = line_height = 0;
    };
    for (QLayoutItem* item : items_) {
        if (item->isEmpty()) continue;
        const QSize size = item->sizeHint();
        if (!line.isEmpty() && line_width + spacing + size.width() > area.width()) place_line();
        line_width += (line.isEmpty() ? 0 : spacing) + size.width();
        line_height = std::max(line_height, size.height());
        line.append(item);
    }
    if (!line.isEmpty()) place_line();
    const int used = y - area.y() - (y > area.y() ? spacing : 0);
    return used + contentsMargins().top() + contentsMargins().bottom();
}

}  // namespace inferscope::ui
