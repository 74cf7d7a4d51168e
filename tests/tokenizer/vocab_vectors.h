#pragma once
// Reading llama.cpp's tokenizer test vectors (models/ggml-vocab-*.gguf.inp/.out) exactly as
// its tests/test-tokenizer-0.cpp does: the .inp file is cut at every "\n__ggml_vocab_test__\n"
// (so the newline ending each test string belongs to the separator, not to the string), and
// each .out line, stripped, holds the expected ids separated by single spaces.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace inferscope::testing {

struct VocabVector {
    std::string text;
    std::vector<int32_t> ids;
};

inline std::string read_whole_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::vector<std::string> split_vocab_inputs(const std::string& raw) {
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    size_t pos = 0;
    while (pos < raw.size()) {
        const size_t next = raw.find(separator, pos);
        if (next == std::string::npos) {
            inputs.push_back(raw.substr(pos));
            break;
        }
        inputs.push_back(raw.substr(pos, next - pos));
        pos = next + separator.size();
    }
    return inputs;
}

inline std::vector<int32_t> parse_id_line(const std::string& line) {
    std::vector<int32_t> ids;
    std::istringstream in(line);
    for (long long id; in >> id;) ids.push_back(static_cast<int32_t>(id));
    return ids;
}

inline std::vector<VocabVector> read_vocab_vectors(const std::filesystem::path& gguf_path) {
    const auto inputs = split_vocab_inputs(read_whole_file(gguf_path.string() + ".inp"));
    std::ifstream out(gguf_path.string() + ".out", std::ios::binary);
    std::vector<std::string> lines;
    for (std::string line; std::getline(out, line);) lines.push_back(line);
    if (lines.size() != inputs.size()) {
        throw std::runtime_error(gguf_path.string() + ": .inp has " + std::to_string(inputs.size()) +
                                 " strings but .out has " + std::to_string(lines.size()) + " lines");
    }
    std::vector<VocabVector> vectors;
    for (size_t i = 0; i < inputs.size(); ++i) vectors.push_back({inputs[i], parse_id_line(lines[i])});
    return vectors;
}

// A test string made readable in failure messages (control bytes and non-ASCII escaped).
inline std::string printable(const std::string& text) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '"' || c == '\\') {
            out += '\\', out += c;
        } else if (byte < 0x20 || byte >= 0x7F) {
            out += "\\x", out += kHex[byte >> 4], out += kHex[byte & 15];
        } else {
            out += c;
        }
    }
    return out + "\"";
}

template <typename Ids>
std::string join_ids(const Ids& ids) {
    std::string out = "[";
    for (const auto id : ids) {
        if (out.size() > 1) out += ' ';
        out += std::to_string(id);
    }
    out += ']';
    return out;
}

}  // namespace inferscope::testing
