#pragma once
// A request's conversation as the JSON messages a chat template reads (the worker renders it
// for generation, the generation panel for the labs while the user types).
#include <QString>
#include <QVector>
#include <nlohmann/json.hpp>

#include "ui/engine_types.h"

namespace inferscope::ui {

// `history`, then `next_user_message` as the user's turn.
inline nlohmann::ordered_json chat_messages_json(const QVector<ChatMessageText>& history, const QString& next_user_message) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    for (const ChatMessageText& m : history) {
        messages.push_back({{"role", m.role.toStdString()}, {"content", m.content.toStdString()}});
    }
    messages.push_back({{"role", "user"}, {"content", next_user_message.toStdString()}});
    return messages;
}

}  // namespace inferscope::ui
