#include "engine/tokenizer/vocabulary.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <initializer_list>
#include <limits>
#include <optional>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"

namespace inferscope::tokenizer_detail {

void fail_metadata(const GgufFile& file, const std::string& key, const std::string& problem) {
    throw GgufError(file.path(), file.metadata_offset(key), "metadata key \"" + key + "\": " + problem);
}

namespace {

const std::string kTokensKey = "tokenizer.ggml.tokens";
const std::string kScoresKey = "tokenizer.ggml.scores";
const std::string kTypesKey = "tokenizer.ggml.token_type";

// Runs a GgufValue conversion, turning its InvalidArgument into a GgufError naming the key.
template <typename Convert>
auto convert_value(const GgufFile& file, const std::string& key, const GgufValue& value, Convert&& convert) {
    try {
        return convert(value);
    } catch (const InvalidArgument& e) {
        fail_metadata(file, key, e.what());
    }
}

// An optional per-token array must cover every token; llama.cpp accepts longer arrays and
// ignores the excess, so only a shorter one is an error.
void require_covers_tokens(const GgufFile& file, const std::string& key, size_t length, size_t n_tokens) {
    if (length < n_tokens) {
        fail_metadata(file, key, "has " + std::to_string(length) + " entries but " + kTokensKey + " has " +
                                     std::to_string(n_tokens));
    }
}

std::vector<float> read_scores(const GgufFile& file, size_t n_tokens) {
    const GgufValue* value = file.find(kScoresKey);
    if (!value) return std::vector<float>(n_tokens, 0.0f);
    auto scores = convert_value(file, kScoresKey, *value, [](const GgufValue& v) { return v.as_f32_vector(); });
    require_covers_tokens(file, kScoresKey, scores.size(), n_tokens);
    scores.resize(n_tokens);
    return scores;
}

std::vector<TokenType> read_types(const GgufFile& file, size_t n_tokens) {
    const GgufValue* value = file.find(kTypesKey);
    if (!value) return std::vector<TokenType>(n_tokens, TokenType::Normal);
    const auto raw = convert_value(file, kTypesKey, *value, [](const GgufValue& v) { return v.as_i32_vector(); });
    require_covers_tokens(file, kTypesKey, raw.size(), n_tokens);
    std::vector<TokenType> types(n_tokens);
    for (size_t i = 0; i < n_tokens; ++i) {
        // Values outside the enum are kept as Undefined, which llama.cpp also maps them to.
        types[i] = (raw[i] >= 0 && raw[i] <= 6) ? static_cast<TokenType>(raw[i]) : TokenType::Undefined;
    }
    return types;
}

uint32_t attr_from_type(TokenType type) {
    switch (type) {
        case TokenType::Unknown: return kAttrUnknown;
        case TokenType::Unused: return kAttrUnused;
        case TokenType::Normal: return kAttrNormal;
        case TokenType::Control: return kAttrControl;
        case TokenType::UserDefined: return kAttrUserDefined;
        case TokenType::Byte: return kAttrByte;
        case TokenType::Undefined: break;
    }
    return 0;
}

// Reads the token strings and builds the text index. Empty strings are renamed as llama.cpp
// does ("[EMPTY_<id>]") so every token has a distinct, non-empty text; duplicates are fatal.
void read_tokens(const GgufFile& file, Vocabulary& vocab) {
    const GgufValue* value = file.find(kTokensKey);
    if (!value) fail_metadata(file, kTokensKey, "required but missing");
    vocab.tokens = convert_value(file, kTokensKey, *value, [](const GgufValue& v) { return v.as_string_vector(); });
    if (vocab.tokens.size() > static_cast<size_t>(INT32_MAX)) fail_metadata(file, kTokensKey, "too many tokens");
    const size_t n = vocab.tokens.size();
    for (size_t i = 0; i < n; ++i) {
        if (vocab.tokens[i].empty()) vocab.tokens[i] = "[EMPTY_" + std::to_string(i) + "]";
    }
    if (const auto duplicate = vocab.index.build(vocab.tokens.data(), n)) {
        fail_metadata(file, kTokensKey,
                      "duplicate token \"" + vocab.tokens[static_cast<size_t>(duplicate->first)] + "\" at ids " +
                          std::to_string(duplicate->first) + " and " + std::to_string(duplicate->second));
    }
    vocab.scores = read_scores(file, n);
    vocab.types = read_types(file, n);
    vocab.attrs.resize(n);
    for (size_t i = 0; i < n; ++i) vocab.attrs[i] = attr_from_type(vocab.types[i]);
}

// One tokenizer.ggml.*_token_id key: a value outside the vocabulary (4294967295 is the usual
// "unset" marker) is ignored like llama.cpp's "bad special token", keeping the default.
// Such a value says so in a warning (the marker itself does not).
void read_special_id(const GgufFile& file, const std::string& key, size_t n_tokens, TokenId& id,
                     std::vector<std::string>& warnings) {
    if (id >= 0 && static_cast<size_t>(id) >= n_tokens) id = kNoToken;  // a default out of range
    const GgufValue* value = file.find(key);
    if (!value || !value->is_integer()) return;
    constexpr int64_t kUnsetMarker = 4294967295;
    int64_t stored = -1;
    try {
        stored = value->as_i64();
    } catch (const InvalidArgument&) {
        stored = std::numeric_limits<int64_t>::max();  // a uint64 beyond int64: certainly out of range
    }
    if (stored >= 0 && static_cast<uint64_t>(stored) < n_tokens) {
        id = static_cast<TokenId>(stored);
    } else if (stored != kUnsetMarker && stored != -1) {
        warnings.push_back(key + " = " + std::to_string(stored) + " is outside the vocabulary of " + std::to_string(n_tokens) +
                           " tokens; ignored (as llama.cpp does), " +
                           (id == kNoToken ? std::string("no such token") : "token " + std::to_string(id) + " is used"));
    }
}

void read_special_ids(const GgufFile& file, const VocabularyDefaults& defaults, Vocabulary& vocab) {
    SpecialTokenIds& ids = vocab.ids;
    ids.bos = defaults.bos, ids.eos = defaults.eos, ids.unk = defaults.unk;
    const size_t n = vocab.tokens.size();
    const std::pair<const char*, TokenId*> keys[] = {
        {"tokenizer.ggml.bos_token_id", &ids.bos},         {"tokenizer.ggml.eos_token_id", &ids.eos},
        {"tokenizer.ggml.eot_token_id", &ids.eot},         {"tokenizer.ggml.eom_token_id", &ids.eom},
        {"tokenizer.ggml.unknown_token_id", &ids.unk},     {"tokenizer.ggml.fim_pre_token_id", &ids.fim_pre},
        {"tokenizer.ggml.fim_suf_token_id", &ids.fim_suf}, {"tokenizer.ggml.fim_mid_token_id", &ids.fim_mid},
        {"tokenizer.ggml.fim_pad_token_id", &ids.fim_pad}, {"tokenizer.ggml.fim_rep_token_id", &ids.fim_rep},
        {"tokenizer.ggml.fim_sep_token_id", &ids.fim_sep},
        // Deprecated spellings; read last so they win, as in llama.cpp.
        {"tokenizer.ggml.prefix_token_id", &ids.fim_pre},  {"tokenizer.ggml.suffix_token_id", &ids.fim_suf},
        {"tokenizer.ggml.middle_token_id", &ids.fim_mid},
    };
    for (const auto& [key, id] : keys) read_special_id(file, key, n, *id, vocab.warnings);
}

void read_add_flags(const GgufFile& file, const VocabularyDefaults& defaults, Vocabulary& vocab) {
    vocab.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix", defaults.add_space_prefix);
    vocab.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", defaults.add_bos);
    vocab.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", defaults.add_eos);
    if (vocab.add_bos && vocab.ids.bos == kNoToken) {
        fail_metadata(file, "tokenizer.ggml.add_bos_token", "is true but tokenizer.ggml.bos_token_id is not set");
    }
    if (vocab.add_eos && vocab.ids.eos == kNoToken) {
        fail_metadata(file, "tokenizer.ggml.add_eos_token", "is true but tokenizer.ggml.eos_token_id is not set");
    }
}

TokenId find_text(const Vocabulary& vocab, std::string_view text) { return vocab.index.find(text); }

// Fills an id the metadata left unset from well-known token texts and marks that token as a
// control token. llama.cpp takes whichever candidate its hash map yields first; we take the
// lowest id so the result is deterministic.
void detect_by_text(Vocabulary& vocab, TokenId& id, std::initializer_list<std::string_view> texts) {
    if (id != kNoToken) return;
    for (const std::string_view text : texts) {
        const TokenId found = find_text(vocab, text);
        if (found != kNoToken && (id == kNoToken || found < id)) id = found;
    }
    if (id != kNoToken) vocab.attrs[static_cast<size_t>(id)] |= kAttrControl;
}

void detect_special_ids(Vocabulary& vocab) {
    SpecialTokenIds& ids = vocab.ids;
    detect_by_text(vocab, ids.eot,
                   {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
                    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"});
    detect_by_text(vocab, ids.eom, {"<|eom_id|>"});
    detect_by_text(vocab, ids.fim_pre,
                   {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>",
                    "<|code_prefix|>", "<|prefix|>"});
    detect_by_text(vocab, ids.fim_suf,
                   {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>",
                    "<|code_suffix|>", "<|suffix|>"});
    detect_by_text(vocab, ids.fim_mid,
                   {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>",
                    "<|code_middle|>", "<|middle|>"});
    detect_by_text(vocab, ids.fim_pad, {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"});
    detect_by_text(vocab, ids.fim_rep, {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"});
    detect_by_text(vocab, ids.fim_sep, {"<|file_sep|>"});
}

// Texts llama.cpp treats as ending generation whatever the metadata says.
constexpr std::array<std::string_view, 22> kEndOfGenerationTexts = {
    "<|eot_id|>",   "<|im_end|>",       "<|end|>",          "<|return|>",          "<|call|>",
    "<|flush|>",    "<|calls|>",        "<end_of_turn>",    "<|endoftext|>",       "</s>",
    "<|eom_id|>",   "<EOT>",            "_<EOT>",           "[EOT]",               "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>",       "<turn|>",             "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
};

// gpt-oss (o200k_harmony) and solar-open use "<|end|>" between turns, not at the end of the
// reply: llama.cpp drops it from the set (and renders it) when their markers are present.
// Gemma 4 likewise keeps "</s>" as ordinary text when "<|tool_response>" exists.
void apply_end_of_generation_exceptions(Vocabulary& vocab, std::vector<TokenId>& eog) {
    auto in_set = [&](std::string_view text) {
        const TokenId id = find_text(vocab, text);
        return id != kNoToken && std::find(eog.begin(), eog.end(), id) != eog.end() ? id : kNoToken;
    };
    auto remove = [&](TokenId id, uint32_t new_attr) {
        eog.erase(std::remove(eog.begin(), eog.end(), id), eog.end());
        vocab.attrs[static_cast<size_t>(id)] = new_attr;
    };
    const bool has_call = in_set("<|call|>") != kNoToken || in_set("<|calls|>") != kNoToken;
    const bool has_return = in_set("<|return|>") != kNoToken, has_flush = in_set("<|flush|>") != kNoToken;
    const TokenId end_id = in_set("<|end|>");
    if (end_id != kNoToken && has_call && (has_return || has_flush)) remove(end_id, kAttrUserDefined);
    const TokenId s_id = in_set("</s>");
    if (s_id != kNoToken && in_set("<|tool_response>") != kNoToken) remove(s_id, kAttrNormal);
}

void collect_end_of_generation(Vocabulary& vocab) {
    std::vector<TokenId> eog;
    const SpecialTokenIds& ids = vocab.ids;
    for (const TokenId id : {ids.fim_pad, ids.fim_rep, ids.fim_sep}) {
        if (id != kNoToken) eog.push_back(id);
    }
    for (const std::string_view text : kEndOfGenerationTexts) {
        const TokenId id = find_text(vocab, text);
        if (id == kNoToken) continue;
        eog.push_back(id);
        vocab.attrs[static_cast<size_t>(id)] |= kAttrControl;
    }
    // gpt-oss markers that must always be rendered and parsed as text (llama.cpp's override).
    for (const std::string_view text : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}) {
        if (const TokenId id = find_text(vocab, text); id != kNoToken) vocab.attrs[id] = kAttrUserDefined;
    }
    for (const TokenId id : {ids.eos, ids.eot, ids.eom}) {
        if (id != kNoToken) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    apply_end_of_generation_exceptions(vocab, eog);
    vocab.end_of_generation = std::move(eog);
}

bool name_mentions_phi3(const GgufFile& file) {
    std::string name = file.get_string("general.name", "");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    return name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos;
}

// GGUF has no per-token lstrip/rstrip flags; llama.cpp sets them for Phi-3 by model name
// (special tokens swallow the whitespace after them, except <unk>, <s> and <|endoftext|>).
void apply_strip_quirks(const GgufFile& file, Vocabulary& vocab) {
    if (!name_mentions_phi3(file)) return;
    for (uint32_t& attr : vocab.attrs) {
        if (attr & (kAttrControl | kAttrUserDefined | kAttrUnknown)) attr |= kAttrRstrip;
    }
    if (const TokenId id = find_text(vocab, "</s>"); id != kNoToken) vocab.attrs[id] |= kAttrRstrip;
    for (const std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
        if (const TokenId id = find_text(vocab, text); id != kNoToken) vocab.attrs[id] &= ~kAttrRstrip;
    }
}

}  // namespace

Vocabulary load_vocabulary(const GgufFile& file, const VocabularyDefaults& defaults) {
    Vocabulary vocab;
    read_tokens(file, vocab);
    read_special_ids(file, defaults, vocab);
    read_add_flags(file, defaults, vocab);
    detect_special_ids(vocab);
    collect_end_of_generation(vocab);
    apply_strip_quirks(file, vocab);
    return vocab;
}

}  // namespace inferscope::tokenizer_detail
