#pragma once
// UTF-8 and byte-level helpers shared by the tokenizers. They reproduce the exact (lenient)
// behaviour of llama.cpp's unicode.cpp where that decides which tokens come out, so that
// malformed input tokenizes the same way instead of failing.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope::tokenizer_detail {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// Length of the UTF-8 sequence a lead byte announces (1 for ASCII, continuation bytes and
// bytes >= 0xF8), as llama.cpp's unicode_len_utf8: the SentencePiece tokenizer and the BPE
// merge loop split text into "characters" this way without validating them.
size_t utf8_sequence_length(unsigned char lead);

// Decodes UTF-8 the way llama.cpp's unicode_cpts_from_utf8 does: a lead byte followed by the
// right number of continuation bytes is accepted without further checks (overlong forms and
// surrogates decode to their numeric value); anything else yields U+FFFD and consumes one
// byte. Unlike llama.cpp, a 4-byte form above U+10FFFF is also treated as invalid (llama.cpp
// throws while re-encoding it).
std::vector<char32_t> decode_utf8_lenient(std::string_view text);

// Appends the UTF-8 encoding of `cp` (which must be <= U+10FFFF; surrogates are encoded
// like any other value, as llama.cpp does).
void append_utf8(std::string& out, char32_t cp);

// Unicode White_Space characters (the set llama.cpp's unicode_set_whitespace holds).
bool is_unicode_white_space(char32_t cp);

// GPT-2's byte-to-unicode table: printable Latin-1 bytes map to themselves, the other 68
// bytes to U+0100.. in byte order, so every byte string becomes printable text.
char32_t byte_to_unicode(uint8_t byte);
std::optional<uint8_t> unicode_to_byte(char32_t cp);

// Appends the byte-level encoding of every byte of `bytes` (each byte becomes one character).
void append_byte_level(std::string& out, std::string_view bytes);

}  // namespace inferscope::tokenizer_detail
