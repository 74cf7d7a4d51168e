#include "engine/tokenizer/special_tokens.h"

#include <algorithm>

#include "engine/tokenizer/vocabulary.h"

namespace inferscope::tokenizer_detail {

namespace {

// llama.cpp strips with C isspace() in the "C" locale: ASCII whitespace only.
bool is_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

SpecialTokenSplitter::SpecialTokenSplitter(const std::vector<std::string>& texts,
                                           const std::vector<uint32_t>& attrs) {
    for (size_t id = 0; id < texts.size(); ++id) {
        const uint32_t attr = attrs[id];
        if (!(attr & (kAttrControl | kAttrUserDefined | kAttrUnknown))) continue;
        candidates_.push_back({static_cast<TokenId>(id), texts[id], (attr & (kAttrControl | kAttrUnknown)) != 0,
                               (attr & kAttrLstrip) != 0, (attr & kAttrRstrip) != 0});
    }
    // Longest first, so "<|im_start|>" wins over a shorter token it contains. llama.cpp's sort
    // leaves equal lengths in an unspecified order; ties go to the lower id here.
    std::stable_sort(candidates_.begin(), candidates_.end(),
                     [](const Candidate& a, const Candidate& b) { return a.text.size() > b.text.size(); });
}

std::vector<TextFragment> SpecialTokenSplitter::split(std::string_view text, bool parse_special) const {
    std::vector<TextFragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({-1, 0, text.size()});
    std::vector<TextFragment> next;
    for (const Candidate& candidate : candidates_) {
        if (candidate.needs_parse_special && !parse_special) continue;
        if (text.find(candidate.text) == std::string_view::npos) continue;  // the common case, cheaply
        next.clear();
        for (const TextFragment& fragment : fragments) {
            if (fragment.is_token()) {
                next.push_back(fragment);
            } else {
                split_fragment(text, fragment, candidate, next);
            }
        }
        fragments.swap(next);
    }
    return fragments;
}

// Replaces one raw fragment by its pieces around every (non-overlapping, left to right)
// occurrence of the candidate's text.
void SpecialTokenSplitter::split_fragment(std::string_view text, const TextFragment& fragment,
                                          const Candidate& candidate, std::vector<TextFragment>& out) const {
    size_t begin = fragment.offset;
    size_t end = fragment.offset + fragment.length;
    while (begin < end) {
        const size_t match = text.substr(0, end).find(candidate.text, begin);
        if (match == std::string_view::npos) break;
        size_t left_end = match;
        if (candidate.lstrip) {
            while (left_end > begin && is_ascii_space(text[left_end - 1])) --left_end;
        }
        if (left_end > begin) out.push_back({-1, begin, left_end - begin});
        out.push_back({candidate.id, 0, 0});
        begin = match + candidate.text.size();
        if (candidate.rstrip) {
            while (begin < end && is_ascii_space(text[begin])) ++begin;
        }
    }
    if (begin < end) out.push_back({-1, begin, end - begin});
}

}  // namespace inferscope::tokenizer_detail
