#pragma once
// Builds small vocabulary-only GGUFs in memory, so tests can state expected ids by hand.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_value.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope::testing {

struct TinyToken {
    std::string text;
    float score = 0.0f;
    TokenType type = TokenType::Normal;
};

struct TinyVocab {
    std::string model;  // "llama" or "gpt2"
    std::vector<TinyToken> tokens;
    std::vector<std::string> merges;  // gpt2 only
    std::vector<std::pair<std::string, GgufValue>> extra;  // further keys (pre, ids, flags...)

    GgufFile to_file() const {
        GgufWriter writer;
        writer.set("general.architecture", GgufValue::string("llama"));
        writer.set("tokenizer.ggml.model", GgufValue::string(model));
        std::vector<std::string> texts;
        std::vector<float> scores;
        std::vector<int32_t> types;
        for (const TinyToken& token : tokens) {
            texts.push_back(token.text);
            scores.push_back(token.score);
            types.push_back(static_cast<int32_t>(token.type));
        }
        writer.set("tokenizer.ggml.tokens", GgufValue::string_array(texts));
        writer.set("tokenizer.ggml.scores", GgufValue::f32_array(scores));
        writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
        if (!merges.empty()) writer.set("tokenizer.ggml.merges", GgufValue::string_array(merges));
        for (const auto& [key, value] : extra) writer.set(key, value);
        return GgufFile::from_bytes(writer.to_bytes(), "tiny-" + model + ".gguf");
    }

    std::unique_ptr<Tokenizer> tokenizer() const { return Tokenizer::from_gguf(to_file()); }
};

}  // namespace inferscope::testing
