#include "engine/synth/builtin_models.h"

#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/synth/synthetic_model.h"

// The GGUF is linked in with the assembler's .incbin: no generated megabyte-sized C array to
// compile, and the bytes sit in read-only data. The path comes from CMake; the assembler also
// stores the size, so no pointers to two distinct symbols are subtracted.
#ifndef INFERSCOPE_STORIES260K_GGUF
#error "INFERSCOPE_STORIES260K_GGUF (the path of resources/models/stories260K.gguf) is set by engine/CMakeLists.txt"
#endif
#if defined(__APPLE__)
#define INFERSCOPE_ASM_SYMBOL(name) "_" #name
#define INFERSCOPE_ASM_RODATA "__TEXT,__const"
#else
#define INFERSCOPE_ASM_SYMBOL(name) #name
#define INFERSCOPE_ASM_RODATA ".rodata"
#endif
__asm__(".pushsection " INFERSCOPE_ASM_RODATA "\n"
        ".balign 64\n"
        ".globl " INFERSCOPE_ASM_SYMBOL(inferscope_stories260k_gguf_begin) "\n"
        ".globl " INFERSCOPE_ASM_SYMBOL(inferscope_stories260k_gguf_size) "\n"
        INFERSCOPE_ASM_SYMBOL(inferscope_stories260k_gguf_begin) ":\n"
        ".incbin \"" INFERSCOPE_STORIES260K_GGUF "\"\n"
        "1:\n"
        ".balign 8\n"
        INFERSCOPE_ASM_SYMBOL(inferscope_stories260k_gguf_size) ":\n"
        ".quad 1b - " INFERSCOPE_ASM_SYMBOL(inferscope_stories260k_gguf_begin) "\n"
        ".popsection\n");
extern "C" const uint8_t inferscope_stories260k_gguf_begin[];
extern "C" const uint64_t inferscope_stories260k_gguf_size;

namespace inferscope {
namespace {

constexpr std::string_view kScheme = "builtin:";

struct BuiltinName {
    BuiltinModel model;
    std::string_view name;
    std::string_view label;
};

constexpr BuiltinName kBuiltins[] = {
    {BuiltinModel::Stories260K, "stories260K", "built-in stories260K (TinyStories, trained; 260K parameters)"},
    {BuiltinModel::Synthetic, "synthetic", "built-in synthetic model (random weights, not trained)"},
};

const BuiltinName& entry(BuiltinModel model) {
    for (const BuiltinName& b : kBuiltins) {
        if (b.model == model) return b;
    }
    throw InvalidArgument("unknown built-in model");
}

}  // namespace

std::string builtin_model_path(BuiltinModel model) { return std::string(kScheme) + std::string(entry(model).name); }

std::optional<BuiltinModel> builtin_model_named(std::string_view path) {
    if (path.substr(0, kScheme.size()) != kScheme) return std::nullopt;
    const std::string_view name = path.substr(kScheme.size());
    std::string names;
    for (const BuiltinName& b : kBuiltins) {
        if (b.name == name) return b.model;
        names += (names.empty() ? "" : ", ") + builtin_model_path(b.model);
    }
    throw InvalidArgument("no built-in model is called \"" + std::string(path) + "\" (there are " + names + ")");
}

std::string_view builtin_model_label(BuiltinModel model) { return entry(model).label; }

std::span<const uint8_t> stories260k_gguf_bytes() {
    return {inferscope_stories260k_gguf_begin, static_cast<size_t>(inferscope_stories260k_gguf_size)};
}

std::shared_ptr<const Model> load_builtin_model(BuiltinModel model) {
    std::string path = builtin_model_path(model);  // appended, not "<" + ...: GCC 12 -Wrestrict false positive
    path = path.insert(0, 1, '<') + '>';
    if (model == BuiltinModel::Synthetic) {
        return Model::from_gguf(GgufFile::from_bytes(build_synthetic_model(synthetic_preset("default")).to_bytes(), path));
    }
    const std::span<const uint8_t> bytes = stories260k_gguf_bytes();
    return Model::from_gguf(GgufFile::from_bytes(std::vector<uint8_t>(bytes.begin(), bytes.end()), path));
}

}  // namespace inferscope
