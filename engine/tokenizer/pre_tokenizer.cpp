#include "engine/tokenizer/pre_tokenizer.h"

#include <pcre2.h>

#include <algorithm>

#include "engine/core/error.h"
#include "engine/tokenizer/unicode_text.h"

namespace inferscope::tokenizer_detail {

// ---------------------------------------------------------------------------------------------
// The regex lists, as llama.cpp's llm_tokenizer_bpe uses them (themselves adapted from the
// models' tokenizer.json). Non-ASCII literals are written as \x{..} escapes so that no editor
// or Unicode normalization can change them (several are canonically equivalent to others).
// ---------------------------------------------------------------------------------------------
namespace {

// GPT-2's pattern. llama.cpp runs it through a hand-written matcher that also has the final
// "\s+" alternative; with or without it the fragments are the same, since an unmatched single
// whitespace character becomes a fragment of its own either way.
constexpr const char* kGpt2 = R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

constexpr const char* kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)re"
    R"re( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

constexpr const char* kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|)re"
    R"re( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Cased letters (Lu/Ll/Lt of an older Unicode) as DeepSeek LLM's tokenizer lists them.
constexpr const char* kDeepseekLlmLetters =
    R"re(\s?[)re"
    R"re(\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF})re"
    R"re(\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386})re"
    R"re(\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F})re"
    R"re(\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA})re"
    R"re(\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15})re"
    R"re(\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})re"
    R"re(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})re"
    R"re(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102})re"
    R"re(\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})re"
    R"re(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})re"
    R"re(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})re"
    R"re(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})re"
    R"re(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})re"
    R"re(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})re"
    R"re(\x{1E900}-\x{1E943}]+)re";

constexpr const char* kDeepseekLlmPunctuation =
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re";

// CJK ideographs, U+0800..U+4E00 and Hangul, exactly as DeepSeek writes the ranges.
constexpr const char* kDeepseekCjk = R"re([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";

constexpr const char* kPoro = R"re( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)re";

// Tekken and GPT-4o split letter runs at case changes. llama.cpp writes "uppercase-ish" as
// ((?=[\p{L}])([^a-z])) (every letter except a-z, so non-ASCII letters count as both cases);
// the same sets are written here as the single classes [^\P{L}a-z] and [^\P{L}A-Z], which
// match identically but need no backtracking frame per character (long runs would otherwise
// exhaust PCRE2's stack).
constexpr const char* kTekken =
    R"re([^\r\n\p{L}\p{N}]?[^\P{L}a-z]*[^\P{L}A-Z]+|[^\r\n\p{L}\p{N}]?[^\P{L}a-z]+[^\P{L}A-Z]*|)re"
    R"re(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

constexpr const char* kGpt4o =
    R"re([^\r\n\p{L}\p{N}]?[^\P{L}a-z]*[^\P{L}A-Z]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)re"
    R"re([^\r\n\p{L}\p{N}]?[^\P{L}a-z]+[^\P{L}A-Z]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|)re"
    R"re(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

}  // namespace

struct PreTokenizerSpec {
    std::vector<const char*> names;
    std::vector<const char*> regexes;
    bool ignore_merges = false;
    bool add_bos = false;
    bool no_bos = false;
};

namespace {

// tokenizer.ggml.pre names and what llama.cpp (src/llama-vocab.cpp) does for each.
const PreTokenizerSpec kSpecs[] = {
    {{"default"}, {R"re([\p{P}\$\+<=>\^~\|]+)re", kGpt2, R"re(\p{N}+)re", "[0-9][0-9][0-9]"}},
    {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de", "gigachat"},
     {kGpt2}},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral"}, {kLlama3}, true, true},
    {{"dbrx", "smaug-bpe"}, {kLlama3}},
    {{"chatglm-bpe", "glm4"}, {kLlama3}, false, false, true},
    {{"qwen2", "deepseek-r1-qwen", "megrez", "stablelm2"}, {kQwen2}},
    {{"deepseek-llm"},
     {"[\r\n]", kDeepseekLlmLetters, kDeepseekLlmPunctuation, R"re(\s+$)re", kDeepseekCjk, R"re(\p{N}+)re"}},
    {{"deepseek-coder"}, {"[\r\n]", R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re", kDeepseekCjk, R"re(\p{N})re"}},
    {{"falcon"}, {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, "[0-9][0-9][0-9]"}},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"}, {R"re(\p{N})re", kGpt2}},
    {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
    {{"viking"}, {kPoro, R"re(\p{N})re"}},
    {{"tekken"}, {kTekken}, true, true},
    {{"gpt-4o", "llama4"}, {kGpt4o}},
};

const PreTokenizerSpec* find_spec(const std::string& name) {
    const std::string wanted = name.empty() ? "default" : name;
    for (const PreTokenizerSpec& spec : kSpecs) {
        for (const char* candidate : spec.names) {
            if (wanted == candidate) return &spec;
        }
    }
    return nullptr;
}

}  // namespace

std::string PreTokenizer::supported_names() {
    std::string out;
    for (const PreTokenizerSpec& spec : kSpecs) {
        for (const char* name : spec.names) out += (out.empty() ? "" : ", ") + std::string(name);
    }
    return out;
}

// ---------------------------------------------------------------------------------------------
// PCRE2 plumbing
// ---------------------------------------------------------------------------------------------

// One compiled pattern. Compiled with PCRE2_UTF but deliberately without PCRE2_UCP: \p{..}
// classes are Unicode either way, while \s must stay ASCII (tab, LF, VT, FF, CR, space).
// llama.cpp's matchers see every non-ASCII White_Space character as VT (split() maps them the
// same way), and with UCP PCRE2 would also count U+180E as a space, which llama.cpp does not.
class CompiledRegex {
public:
    explicit CompiledRegex(const char* pattern) {
        int error = 0;
        PCRE2_SIZE error_offset = 0;
        code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_DOLLAR_ENDONLY, &error, &error_offset, nullptr);
        if (!code_) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof(message));
            throw Error("pre-tokenizer regex does not compile at offset " + std::to_string(error_offset) + ": " +
                        reinterpret_cast<const char*>(message));
        }
        pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // best effort: the interpreter is the fallback
    }
    ~CompiledRegex() { pcre2_code_free(code_); }
    CompiledRegex(const CompiledRegex&) = delete;
    CompiledRegex& operator=(const CompiledRegex&) = delete;

    // Finds the first match in subject[start, size); returns false when there is none.
    bool find(std::string_view subject, size_t start, pcre2_match_data* data, size_t& begin, size_t& end) const {
        int rc = match(subject, start, data, nullptr, 0);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) rc = match_with_large_jit_stack(subject, start, data);
        if (rc == PCRE2_ERROR_NOMATCH) return false;
        if (rc < 0) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof(message));
            throw Error(std::string("pre-tokenizer regex failed: ") + reinterpret_cast<const char*>(message));
        }
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
        begin = ovector[0];
        end = ovector[1];
        return true;
    }

private:
    int match(std::string_view subject, size_t start, pcre2_match_data* data, pcre2_match_context* context,
              uint32_t options) const {
        return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), start,
                           PCRE2_NO_UTF_CHECK | options, data, context);
    }

    // The JIT's default 32 KiB stack suffices for ordinary text; a pathological input gets a
    // heap stack of up to 256 MiB for this one call, then the interpreter as a last resort.
    int match_with_large_jit_stack(std::string_view subject, size_t start, pcre2_match_data* data) const {
        struct Resources {
            pcre2_match_context* context = pcre2_match_context_create(nullptr);
            pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 256 * 1024 * 1024, nullptr);
            ~Resources() {
                pcre2_jit_stack_free(stack);
                pcre2_match_context_free(context);
            }
        } resources;
        int rc = PCRE2_ERROR_JIT_STACKLIMIT;
        if (resources.context && resources.stack) {
            pcre2_jit_stack_assign(resources.context, nullptr, resources.stack);
            rc = match(subject, start, data, resources.context, 0);
        }
        return rc == PCRE2_ERROR_JIT_STACKLIMIT ? match(subject, start, data, nullptr, PCRE2_NO_JIT) : rc;
    }

    pcre2_code* code_ = nullptr;
};

PreTokenizer::PreTokenizer(const std::string& name) : spec_(find_spec(name)) {
    if (!spec_) {
        throw UnsupportedError("pre-tokenizer \"" + name + "\" (tokenizer.ggml.pre) is not supported; supported: " +
                               supported_names());
    }
    for (const char* pattern : spec_->regexes) regexes_.push_back(std::make_unique<CompiledRegex>(pattern));
}

PreTokenizer::~PreTokenizer() = default;

bool PreTokenizer::ignore_merges() const { return spec_->ignore_merges; }
bool PreTokenizer::default_add_bos() const { return spec_->add_bos; }
bool PreTokenizer::has_no_bos() const { return spec_->no_bos; }

// ---------------------------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------------------------
namespace {

// The text the regexes run on, one code point per input code point: non-ASCII White_Space
// becomes VT (as llama.cpp's matchers see it) and surrogates, which PCRE2 cannot take in
// UTF-8, become U+E000, a code point in the same (non-letter, non-space) class for llama.cpp.
struct MatchText {
    std::string utf8;
    std::vector<size_t> offsets;  // byte offset of each code point, plus the end

    explicit MatchText(const std::vector<char32_t>& cpts) {
        utf8.reserve(cpts.size());
        offsets.reserve(cpts.size() + 1);
        for (const char32_t cp : cpts) {
            offsets.push_back(utf8.size());
            char32_t shown = cp;
            if (cp >= 0x80 && is_unicode_white_space(cp)) shown = 0x0B;
            if (cp >= 0xD800 && cp <= 0xDFFF) shown = 0xE000;
            append_utf8(utf8, shown);
        }
        offsets.push_back(utf8.size());
    }
    // Code point index of a byte offset that falls on a code point boundary.
    size_t index_of(size_t byte_offset) const {
        return static_cast<size_t>(std::lower_bound(offsets.begin(), offsets.end(), byte_offset) - offsets.begin());
    }
};

struct MatchDataDeleter {
    void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

// Cuts the fragment of `length` code points at `start` by one regex: every match and every
// stretch between matches becomes a fragment (appended to `out` as code point counts).
void split_fragment(const CompiledRegex& regex, const MatchText& text, size_t start, size_t length,
                    pcre2_match_data* data, std::vector<size_t>& out) {
    const size_t base = text.offsets[start];
    const std::string_view subject(text.utf8.data() + base, text.offsets[start + length] - base);
    auto cp_index = [&](size_t byte_in_subject) { return text.index_of(base + byte_in_subject); };
    size_t emitted = 0;  // bytes of `subject` already assigned to fragments
    size_t search = 0, begin = 0, end = 0;
    while (search < subject.size() && regex.find(subject, search, data, begin, end)) {
        if (end == begin) {  // none of the patterns matches empty; never loop on one anyway
            if (begin >= subject.size()) break;
            search = begin + utf8_sequence_length(static_cast<unsigned char>(subject[begin]));
            continue;
        }
        if (begin > emitted) out.push_back(cp_index(begin) - cp_index(emitted));
        out.push_back(cp_index(end) - cp_index(begin));
        emitted = search = end;
    }
    if (emitted < subject.size()) out.push_back(start + length - cp_index(emitted));
}

}  // namespace

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
    const std::vector<char32_t> cpts = decode_utf8_lenient(text);
    const MatchText match_text(cpts);
    // A single ovector pair is enough: only the overall match is used (rc 0 just means "more
    // groups than room", which is fine).
    const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(pcre2_match_data_create(1, nullptr));

    std::vector<size_t> lengths;  // fragment lengths in code points, covering the whole text
    if (!cpts.empty()) lengths.push_back(cpts.size());
    std::vector<size_t> next;
    for (const auto& regex : regexes_) {
        next.clear();
        size_t start = 0;
        for (const size_t length : lengths) {
            split_fragment(*regex, match_text, start, length, data.get(), next);
            start += length;
        }
        lengths.swap(next);
    }

    std::vector<std::string> words;
    words.reserve(lengths.size());
    size_t start = 0;
    std::string utf8;
    for (const size_t length : lengths) {
        utf8.clear();
        for (size_t i = start; i < start + length; ++i) append_utf8(utf8, cpts[i]);
        std::string& word = words.emplace_back();
        append_byte_level(word, utf8);
        start += length;
    }
    return words;
}

}  // namespace inferscope::tokenizer_detail
