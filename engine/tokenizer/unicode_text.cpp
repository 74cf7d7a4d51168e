#include "engine/tokenizer/unicode_text.h"

namespace inferscope::tokenizer_detail {

size_t utf8_sequence_length(unsigned char lead) {
    // Indexed by the high nibble: 0x0-0xB -> 1, 0xC-0xD -> 2, 0xE -> 3, 0xF -> 4.
    static constexpr size_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return kLengths[lead >> 4];
}

namespace {

bool is_continuation(std::string_view text, size_t pos) {
    return pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80;
}

// Decodes one sequence at `pos`; returns the code point and its byte length, or nullopt when
// the bytes there do not form a sequence llama.cpp would accept.
std::optional<std::pair<char32_t, size_t>> decode_one(std::string_view text, size_t pos) {
    const auto lead = static_cast<unsigned char>(text[pos]);
    if (lead < 0x80) return std::pair<char32_t, size_t>{lead, 1};
    size_t length = 0;
    char32_t cp = 0;
    if ((lead & 0xE0) == 0xC0) {
        length = 2, cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
        length = 3, cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
        length = 4, cp = lead & 0x07;
    } else {
        return std::nullopt;  // a stray continuation byte or 0xF8..0xFF
    }
    for (size_t i = 1; i < length; ++i) {
        if (!is_continuation(text, pos + i)) return std::nullopt;
        cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
    }
    if (cp > 0x10FFFF) return std::nullopt;
    return std::pair<char32_t, size_t>{cp, length};
}

}  // namespace

std::vector<char32_t> decode_utf8_lenient(std::string_view text) {
    std::vector<char32_t> out;
    out.reserve(text.size());
    size_t pos = 0;
    while (pos < text.size()) {
        if (const auto decoded = decode_one(text, pos)) {
            out.push_back(decoded->first);
            pos += decoded->second;
        } else {
            out.push_back(kReplacementCharacter);
            ++pos;
        }
    }
    return out;
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool is_unicode_white_space(char32_t cp) {
    // The White_Space property (PropList.txt); stable since Unicode 6.3.
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// The bytes GPT-2 leaves unchanged: '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF. The others
// (0x00-0x20, 0x7F-0xA0, 0xAD) are numbered 0..67 in byte order and shifted to U+0100.
namespace {
bool maps_to_itself(uint32_t byte) {
    return (byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF);
}
}  // namespace

char32_t byte_to_unicode(uint8_t byte) {
    if (maps_to_itself(byte)) return byte;
    if (byte <= 0x20) return 0x100 + byte;                // 33 bytes: n = 0..32
    if (byte >= 0x7F && byte <= 0xA0) return 0x121 + (byte - 0x7F);  // 34 bytes: n = 33..66
    return 0x143;                                         // 0xAD: n = 67
}

std::optional<uint8_t> unicode_to_byte(char32_t cp) {
    if (cp <= 0xFF) {
        if (maps_to_itself(cp)) return static_cast<uint8_t>(cp);
        return std::nullopt;
    }
    if (cp <= 0x120) return static_cast<uint8_t>(cp - 0x100);
    if (cp <= 0x142) return static_cast<uint8_t>(0x7F + (cp - 0x121));
    if (cp == 0x143) return static_cast<uint8_t>(0xAD);
    return std::nullopt;
}

void append_byte_level(std::string& out, std::string_view bytes) {
    for (const char c : bytes) append_utf8(out, byte_to_unicode(static_cast<uint8_t>(c)));
}

}  // namespace inferscope::tokenizer_detail
