#pragma once
// Reading tokenizer.ggml.* into the token table both tokenizer kinds share, resolving special
// token ids, token attributes and the end-of-generation set the way llama.cpp's
// llama_vocab::impl::load does (including its text-based auto-detection of EOT/FIM tokens).
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/token_index.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {
class GgufFile;
}

namespace inferscope::tokenizer_detail {

inline constexpr TokenId kNoToken = -1;

// llama.cpp's llama_token_attr bits. Unlike the single stored TokenType, attributes are a
// set: auto-detection adds Control to EOG-looking tokens and model quirks add Lstrip/Rstrip.
enum TokenAttr : uint32_t {
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
    kAttrLstrip = 1u << 7,
    kAttrRstrip = 1u << 8,
};

// Heterogeneous hashing so lookups by string_view do not allocate.
struct StringViewHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct SpecialTokenIds {
    TokenId bos = kNoToken, eos = kNoToken, unk = kNoToken, eot = kNoToken, eom = kNoToken;
    TokenId fim_pre = kNoToken, fim_suf = kNoToken, fim_mid = kNoToken;
    TokenId fim_pad = kNoToken, fim_rep = kNoToken, fim_sep = kNoToken;
};

// What llama.cpp assumes for a tokenizer type (and pre-tokenizer) before reading the keys.
struct VocabularyDefaults {
    TokenId bos = kNoToken, eos = kNoToken, unk = kNoToken;
    bool add_bos = false, add_eos = false, add_space_prefix = false;
};

struct Vocabulary {
    std::vector<std::string> tokens;
    std::vector<TokenType> types;  // as stored (Normal when the file has no token_type array)
    std::vector<float> scores;     // 0 when the file has no scores
    std::vector<uint32_t> attrs;   // TokenAttr bits after llama.cpp's adjustments
    TokenIndex index;  // over `tokens`' buffer, which moves along with the vector
    SpecialTokenIds ids;
    bool add_bos = false, add_eos = false, add_space_prefix = false;
    std::vector<TokenId> end_of_generation;  // sorted, unique
    std::vector<std::string> warnings;        // what was read but not used, one line each
};

Vocabulary load_vocabulary(const GgufFile& file, const VocabularyDefaults& defaults);

// Throws GgufError naming `key` (the file's path and the key's offset come from `file`).
[[noreturn]] void fail_metadata(const GgufFile& file, const std::string& key, const std::string& problem);

}  // namespace inferscope::tokenizer_detail
