#include "engine/convert/llama2c.h"

#include <cstring>
#include <limits>
#include <vector>

#include "engine/core/error.h"

namespace inferscope {
namespace {

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);
constexpr int kMaxDimension = 1 << 16;
constexpr int kMaxVocabulary = 1 << 20;
constexpr int kMaxLayers = 1024;
constexpr int kMaxSequence = 1 << 20;
constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": export.py --version 1 or 2
constexpr float kLlama2cRmsEps = 1e-5f;           // run.c's fixed epsilon

int32_t read_i32(std::string_view bytes, size_t offset) {
    int32_t value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

void require_range(const std::string& source, const char* field, int value, int max) {
    if (value < 1 || value > max) {
        throw Error(source + ": llama2.c header field " + field + " is " + std::to_string(value) + ", expected 1.." +
                    std::to_string(max));
    }
}

// F32 values in the checkpoint after the header, in export order (version 0). The header's
// bounds keep every product far below 2^64.
uint64_t expected_weight_floats(const Llama2cConfig& c) {
    const uint64_t dim = static_cast<uint64_t>(c.dim), hidden = static_cast<uint64_t>(c.hidden_dim);
    const uint64_t layers = static_cast<uint64_t>(c.n_layers), vocab = static_cast<uint64_t>(c.vocab_size);
    const uint64_t head_size = dim / static_cast<uint64_t>(c.n_heads);
    const uint64_t kv_dim = head_size * static_cast<uint64_t>(c.n_kv_heads);
    const uint64_t per_layer = 2 * dim + 2 * dim * dim + 2 * dim * kv_dim + 3 * dim * hidden;  // norms, wq wo, wk wv, w1-3
    const uint64_t rope_tables = static_cast<uint64_t>(c.seq_len) * head_size;                  // cos and sin, half each
    const uint64_t classifier = c.shared_classifier ? 0 : vocab * dim;
    return vocab * dim + layers * per_layer + dim + rope_tables + classifier;
}

// Walks the checkpoint's weights in export order.
class WeightCursor {
public:
    WeightCursor(std::string_view checkpoint) : bytes_(checkpoint), offset_(kHeaderBytes) {}
    std::vector<float> take(uint64_t count) {
        std::vector<float> values(count);
        std::memcpy(values.data(), bytes_.data() + offset_, count * sizeof(float));
        offset_ += count * sizeof(float);
        return values;
    }
    void skip(uint64_t count) { offset_ += count * sizeof(float); }

private:
    std::string_view bytes_;
    size_t offset_;
};

// One matrix per layer, stored back to back: returns layer l's slice of `all`.
std::span<const float> layer_slice(const std::vector<float>& all, int layer, uint64_t per_layer) {
    return std::span<const float>(all).subspan(static_cast<size_t>(layer) * per_layer, per_layer);
}

void add_weights(GgufWriter& w, const Llama2cConfig& c, std::string_view checkpoint) {
    const uint64_t dim = static_cast<uint64_t>(c.dim), hidden = static_cast<uint64_t>(c.hidden_dim);
    const uint64_t vocab = static_cast<uint64_t>(c.vocab_size), layers = static_cast<uint64_t>(c.n_layers);
    const uint64_t head_size = dim / static_cast<uint64_t>(c.n_heads);
    const uint64_t kv_dim = head_size * static_cast<uint64_t>(c.n_kv_heads);
    WeightCursor cursor(checkpoint);
    const std::vector<float> embeddings = cursor.take(vocab * dim);        // [vocab][dim]
    const std::vector<float> attn_norm = cursor.take(layers * dim);        // [layer][dim]
    const std::vector<float> wq = cursor.take(layers * dim * dim);         // [layer][dim out][dim in]
    const std::vector<float> wk = cursor.take(layers * kv_dim * dim);      // [layer][kv_dim][dim]
    const std::vector<float> wv = cursor.take(layers * kv_dim * dim);      // [layer][kv_dim][dim]
    const std::vector<float> wo = cursor.take(layers * dim * dim);         // [layer][dim][dim]
    const std::vector<float> ffn_norm = cursor.take(layers * dim);         // [layer][dim]
    const std::vector<float> w1 = cursor.take(layers * hidden * dim);      // [layer][hidden][dim] (gate)
    const std::vector<float> w2 = cursor.take(layers * dim * hidden);      // [layer][dim][hidden] (down)
    const std::vector<float> w3 = cursor.take(layers * hidden * dim);      // [layer][hidden][dim] (up)
    const std::vector<float> final_norm = cursor.take(dim);                // [dim]
    cursor.skip(static_cast<uint64_t>(c.seq_len) * head_size);             // RoPE tables: recomputed at run time

    w.add_f32_tensor("token_embd.weight", {dim, vocab}, embeddings);
    w.add_f32_tensor("output_norm.weight", {dim}, final_norm);
    if (!c.shared_classifier) w.add_f32_tensor("output.weight", {dim, vocab}, cursor.take(vocab * dim));
    for (int l = 0; l < c.n_layers; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        w.add_f32_tensor(p + "attn_norm.weight", {dim}, layer_slice(attn_norm, l, dim));
        w.add_f32_tensor(p + "attn_q.weight", {dim, dim}, layer_slice(wq, l, dim * dim));
        w.add_f32_tensor(p + "attn_k.weight", {dim, kv_dim}, layer_slice(wk, l, kv_dim * dim));
        w.add_f32_tensor(p + "attn_v.weight", {dim, kv_dim}, layer_slice(wv, l, kv_dim * dim));
        w.add_f32_tensor(p + "attn_output.weight", {dim, dim}, layer_slice(wo, l, dim * dim));
        w.add_f32_tensor(p + "ffn_norm.weight", {dim}, layer_slice(ffn_norm, l, dim));
        w.add_f32_tensor(p + "ffn_gate.weight", {dim, hidden}, layer_slice(w1, l, hidden * dim));
        w.add_f32_tensor(p + "ffn_down.weight", {hidden, dim}, layer_slice(w2, l, dim * hidden));
        w.add_f32_tensor(p + "ffn_up.weight", {dim, hidden}, layer_slice(w3, l, hidden * dim));
    }
}

struct Vocabulary {
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
};

enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

bool is_byte_piece(const std::string& piece) {
    if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return false;
    const auto hex = [](char ch) { return (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'F') || (ch >= 'a' && ch <= 'f'); };
    return hex(piece[3]) && hex(piece[4]);
}

// llama2.c's tokenizer.py writes SentencePiece's U+2581 as a plain space; GGUF keeps U+2581.
std::string with_sentencepiece_spaces(const std::string& piece) {
    std::string out;
    for (char ch : piece) {
        if (ch == ' ') out += "\xE2\x96\x81";
        else out += ch;
    }
    return out;
}

void add_piece(Vocabulary& v, int id, std::string piece, float score) {
    int32_t type = kNormal;
    if (id == 0) {
        piece = "<unk>";
        type = kUnknown;
    } else if (id == 1 || id == 2) {  // written as "\n<s>\n" and "\n</s>\n"
        piece = id == 1 ? "<s>" : "</s>";
        type = kControl;
    } else if (is_byte_piece(piece)) {
        type = kByte;
    } else {
        piece = with_sentencepiece_spaces(piece);
    }
    v.tokens.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
}

Vocabulary parse_tokenizer(std::string_view bytes, int vocab_size, const std::string& source) {
    const auto fail = [&source](size_t offset, const std::string& problem) {
        return Error(source + ": offset " + std::to_string(offset) + ": " + problem);
    };
    if (bytes.size() < sizeof(int32_t)) throw fail(0, "too short for a llama2.c tokenizer (no max_token_length)");
    const int32_t max_token_length = read_i32(bytes, 0);
    if (max_token_length < 1 || max_token_length > 4096) {
        throw fail(0, "max_token_length is " + std::to_string(max_token_length) + ", expected 1..4096");
    }
    Vocabulary v;
    size_t offset = sizeof(int32_t);
    for (int id = 0; id < vocab_size; ++id) {
        if (bytes.size() - offset < 2 * sizeof(int32_t)) {
            throw fail(offset, "ends at token " + std::to_string(id) + " of the model's " + std::to_string(vocab_size));
        }
        float score;
        std::memcpy(&score, bytes.data() + offset, sizeof score);
        const int32_t length = read_i32(bytes, offset + sizeof(float));
        offset += 2 * sizeof(int32_t);
        if (length < 0 || length > max_token_length || bytes.size() - offset < static_cast<size_t>(length)) {
            throw fail(offset, "token " + std::to_string(id) + " has length " + std::to_string(length) +
                                   " (max_token_length " + std::to_string(max_token_length) + ")");
        }
        if (!(score > -std::numeric_limits<float>::infinity() && score < std::numeric_limits<float>::infinity())) {
            throw fail(offset, "token " + std::to_string(id) + " has a non-finite score");
        }
        add_piece(v, id, std::string(bytes.substr(offset, static_cast<size_t>(length))), score);
        offset += static_cast<size_t>(length);
    }
    if (offset != bytes.size()) {
        throw fail(offset, std::to_string(bytes.size() - offset) + " bytes follow the model's " + std::to_string(vocab_size) +
                               " tokens: is the tokenizer for a different model?");
    }
    return v;
}

void add_metadata(GgufWriter& w, const Llama2cConfig& c, const Llama2cSources& s) {
    w.set("general.architecture", GgufValue::string("llama"));
    w.set("general.name", GgufValue::string(s.model_name));
    w.set("llama.context_length", GgufValue::u32(static_cast<uint32_t>(s.context_length > 0 ? s.context_length : c.seq_len)));
    w.set("llama.embedding_length", GgufValue::u32(static_cast<uint32_t>(c.dim)));
    w.set("llama.feed_forward_length", GgufValue::u32(static_cast<uint32_t>(c.hidden_dim)));
    w.set("llama.block_count", GgufValue::u32(static_cast<uint32_t>(c.n_layers)));
    w.set("llama.attention.head_count", GgufValue::u32(static_cast<uint32_t>(c.n_heads)));
    w.set("llama.attention.head_count_kv", GgufValue::u32(static_cast<uint32_t>(c.n_kv_heads)));
    w.set("llama.rope.dimension_count", GgufValue::u32(static_cast<uint32_t>(c.dim / c.n_heads)));
    w.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(kLlama2cRmsEps));
}

}  // namespace

Llama2cConfig parse_llama2c_header(std::string_view checkpoint, const std::string& source) {
    if (checkpoint.size() >= sizeof(uint32_t)) {
        uint32_t magic;
        std::memcpy(&magic, checkpoint.data(), sizeof magic);
        if (magic == kVersionedMagic) {
            throw UnsupportedError(source + ": a llama2.c checkpoint of export version 1 or 2; only the legacy format "
                                            "(export.py --version 0, as the published tinyllamas files) is supported");
        }
    }
    if (checkpoint.size() < kHeaderBytes) {
        throw Error(source + ": " + std::to_string(checkpoint.size()) + " bytes, too short for a llama2.c header (" +
                    std::to_string(kHeaderBytes) + ")");
    }
    Llama2cConfig c;
    c.dim = read_i32(checkpoint, 0);
    c.hidden_dim = read_i32(checkpoint, 4);
    c.n_layers = read_i32(checkpoint, 8);
    c.n_heads = read_i32(checkpoint, 12);
    c.n_kv_heads = read_i32(checkpoint, 16);
    const int32_t signed_vocab = read_i32(checkpoint, 20);
    c.seq_len = read_i32(checkpoint, 24);
    c.shared_classifier = signed_vocab > 0;
    c.vocab_size = signed_vocab == std::numeric_limits<int32_t>::min() ? 0 : (signed_vocab < 0 ? -signed_vocab : signed_vocab);
    require_range(source, "dim", c.dim, kMaxDimension);
    require_range(source, "hidden_dim", c.hidden_dim, kMaxDimension * 4);
    require_range(source, "n_layers", c.n_layers, kMaxLayers);
    require_range(source, "n_heads", c.n_heads, c.dim);
    require_range(source, "n_kv_heads", c.n_kv_heads, c.n_heads);
    require_range(source, "vocab_size", c.vocab_size, kMaxVocabulary);
    require_range(source, "seq_len", c.seq_len, kMaxSequence);
    if (c.dim % c.n_heads != 0 || (c.dim / c.n_heads) % 2 != 0 || c.n_heads % c.n_kv_heads != 0) {
        throw Error(source + ": llama2.c header has dim " + std::to_string(c.dim) + ", n_heads " + std::to_string(c.n_heads) +
                    ", n_kv_heads " + std::to_string(c.n_kv_heads) +
                    ": heads must split dim into even head sizes and KV heads must divide the heads");
    }
    const uint64_t expected = kHeaderBytes + expected_weight_floats(c) * sizeof(float);
    if (checkpoint.size() != expected) {
        throw Error(source + ": " + std::to_string(checkpoint.size()) + " bytes, but a llama2.c checkpoint with this header (" +
                    std::to_string(c.n_layers) + " layers, dim " + std::to_string(c.dim) + ", vocab " +
                    std::to_string(c.vocab_size) + (c.shared_classifier ? ", shared classifier" : ", separate classifier") +
                    ") has " + std::to_string(expected));
    }
    return c;
}

GgufWriter convert_llama2c(const Llama2cSources& sources) {
    const Llama2cConfig config = parse_llama2c_header(sources.checkpoint, sources.checkpoint_name);
    if (sources.context_length < 0 || sources.context_length > kMaxSequence) {
        throw InvalidArgument("context length " + std::to_string(sources.context_length) + " is outside 0.." +
                              std::to_string(kMaxSequence));
    }
    const Vocabulary vocab = parse_tokenizer(sources.tokenizer, config.vocab_size, sources.tokenizer_name);
    GgufWriter w;
    add_metadata(w, config, sources);
    w.set("tokenizer.ggml.model", GgufValue::string("llama"));
    w.set("tokenizer.ggml.tokens", GgufValue::string_array(vocab.tokens));
    w.set("tokenizer.ggml.scores", GgufValue::f32_array(vocab.scores));
    w.set("tokenizer.ggml.token_type", GgufValue::i32_array(vocab.types));
    w.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(0));
    w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
    w.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
    w.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
    add_weights(w, config, sources.checkpoint);
    return w;
}

}  // namespace inferscope
