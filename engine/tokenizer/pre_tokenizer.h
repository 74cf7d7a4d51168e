#pragma once
// The GPT-2-style pre-tokenizer: text is cut into words by a list of regexes chosen by
// tokenizer.ggml.pre, each applied in turn to every fragment the previous ones produced.
// Like llama.cpp's unicode_regex_split, both the matches and the text between matches become
// fragments, so no byte is ever dropped; the words come back byte-level encoded.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope::tokenizer_detail {

struct PreTokenizerSpec;
class CompiledRegex;

class PreTokenizer {
public:
    // `name` is tokenizer.ggml.pre; "" (key absent) means llama.cpp's "default". Throws
    // UnsupportedError, listing the supported names, for any other unknown name.
    explicit PreTokenizer(const std::string& name);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Splits `text` into words, each byte-level encoded (every byte one printable character).
    std::vector<std::string> split(std::string_view text) const;

    // Per-pre-tokenizer settings llama.cpp ties to the name.
    bool ignore_merges() const;   // a word that is itself a token is not merged (Llama 3, Tekken)
    bool default_add_bos() const;  // add BOS unless tokenizer.ggml.add_bos_token says otherwise
    bool has_no_bos() const;       // the default BOS id is "none" (ChatGLM)

    static std::string supported_names();

private:
    const PreTokenizerSpec* spec_;
    std::vector<std::unique_ptr<CompiledRegex>> regexes_;
};

}  // namespace inferscope::tokenizer_detail
