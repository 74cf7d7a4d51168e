#pragma once
// What each chart tab shows and what to try on it: the text of Help › Help on This Tab (F1)
// and the steps of the guided tour, which walks through the lessons in teaching order.
#include <QList>
#include <QString>
#include <optional>

namespace inferscope::ui {

struct TabHelp {
    QString key;       // the tab widget's objectName
    QString title;     // the tab's label, without the mnemonic
    QString what;      // what the tab shows and what it teaches
    QString try_this;  // one suggested action
};

// Every tab, in the tabs' order.
QList<TabHelp> all_tab_help();
std::optional<TabHelp> tab_help(const QString& key);
// The guided tour: prefill vs decode, KV growth, batching, quantization, outliers, speculative.
QList<TabHelp> guided_tour_steps();

}  // namespace inferscope::ui
