#pragma once
// Splitting input text on special-token strings before pre-tokenization, as llama.cpp's
// tokenizer_st_partition does: control (and unknown) tokens only when parse_special is set,
// user-defined tokens always; a token with the lstrip/rstrip attribute swallows the ASCII
// whitespace before/after it.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope::tokenizer_detail {

// Either a special token or a byte range of the input left for the model's tokenizer.
struct TextFragment {
    TokenId token = -1;  // >= 0 for a special token
    size_t offset = 0;
    size_t length = 0;
    bool is_token() const { return token >= 0; }
};

class SpecialTokenSplitter {
public:
    SpecialTokenSplitter() = default;
    // `texts` must outlive the splitter (the tokenizer's own token strings).
    SpecialTokenSplitter(const std::vector<std::string>& texts, const std::vector<uint32_t>& attrs);

    std::vector<TextFragment> split(std::string_view text, bool parse_special) const;

private:
    struct Candidate {
        TokenId id;
        std::string_view text;
        bool needs_parse_special;  // control or unknown tokens
        bool lstrip;
        bool rstrip;
    };
    void split_fragment(std::string_view text, const TextFragment& fragment, const Candidate& candidate,
                        std::vector<TextFragment>& out) const;

    std::vector<Candidate> candidates_;  // longest text first, as llama.cpp searches them
};

}  // namespace inferscope::tokenizer_detail
