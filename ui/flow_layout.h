#pragma once
// A layout that places its items left to right and starts a new line where the next one would
// not fit, so a row of lab controls wraps in a narrow window instead of squeezing each control
// below the size its text needs. Items keep their size hints; lines are centred vertically.
#include <QLayout>
#include <QList>

namespace inferscope::ui {

class FlowLayout : public QLayout {
public:
    explicit FlowLayout(QWidget* parent = nullptr);
    ~FlowLayout() override;

    void addItem(QLayoutItem* item) override;
    int count() const override { return static_cast<int>(items_.size()); }
    QLayoutItem* itemAt(int index) const override { return items_.value(index); }
    QLayoutItem* takeAt(int index) override;
    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize minimumSize() const override;
    QSize sizeHint() const override;
    void setGeometry(const QRect& rect) override;

private:
    // Lays the items out in `rect` (moving them only when `apply`); returns the height used.
    int arrange(const QRect& rect, bool apply) const;
    int gap() const;

    QList<QLayoutItem*> items_;
};

// A label (with `field` as its buddy) and the field as one item, so a line break never
// separates them; `extra` (a value read-out) joins them when given.
QWidget* labelled_field(const QString& text, QWidget* field, QWidget* extra = nullptr);

}  // namespace inferscope::ui
