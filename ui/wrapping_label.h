#pragma once
// Labels whose text can hold long runs without spaces (model output, names from a file).
#include <QLabel>

namespace inferscope::ui {

// Word-wraps `label` and lets it shrink below its longest word: a wrapped label's minimum
// width is otherwise that word's width, and a long enough one widens the window.
inline void wrap_within_column(QLabel* label) {
    label->setWordWrap(true);
    label->setMinimumWidth(1);
}

}  // namespace inferscope::ui
