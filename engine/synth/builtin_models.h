#pragma once
// The models the app and the CLI open without a file: stories260K, a trained TinyStories
// model shipped in resources/models (the default, so a first run writes a story), and the
// random synthetic model, both named by a "builtin:" path.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace inferscope {

class Model;

enum class BuiltinModel { Stories260K, Synthetic };

// "builtin:stories260K", "builtin:synthetic".
std::string builtin_model_path(BuiltinModel model);
// The built-in model a path names; nullopt for any other path. A "builtin:" path that names
// no built-in model is an InvalidArgument listing the names.
std::optional<BuiltinModel> builtin_model_named(std::string_view path);
// What the model is, for titles and messages.
std::string_view builtin_model_label(BuiltinModel model);

std::shared_ptr<const Model> load_builtin_model(BuiltinModel model = BuiltinModel::Stories260K);

// resources/models/stories260K.gguf as linked into the program.
std::span<const uint8_t> stories260k_gguf_bytes();

}  // namespace inferscope
