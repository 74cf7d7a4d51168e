#include "engine/synth/synthetic_model.h"

#include <array>
#include <cmath>
#include <cstring>
#include <numbers>

#include "engine/core/error.h"
#include "engine/formats/quant_ref.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/unicode_text.h"

namespace inferscope {
namespace {

// Gaussian numbers from SplitMix64 and Box-Muller: fast enough to fill a 0.5B-parameter
// model in seconds, and the same on every platform (std::normal_distribution is not).
class GaussianSource {
public:
    explicit GaussianSource(uint64_t seed) : state_(seed) {}
    float next() {
        if (has_spare_) {
            has_spare_ = false;
            return spare_;
        }
        const double u1 = (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53;
        const double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
        const double radius = std::sqrt(-2.0 * std::log(u1));
        spare_ = static_cast<float>(radius * std::sin(2.0 * M_PI * u2));
        has_spare_ = true;
        return static_cast<float>(radius * std::cos(2.0 * M_PI * u2));
    }
    uint64_t next_u64() {
        uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }

private:
    uint64_t state_;
    float spare_ = 0;
    bool has_spare_ = false;
};

std::vector<float> gaussian(GaussianSource& rng, size_t n, float mean, float std) {
    std::vector<float> values(n);
    for (auto& v : values) v = mean + std * rng.next();
    return values;
}

std::vector<uint8_t> encode(GgmlType type, const std::vector<float>& values, int64_t row_length) {
    const auto rows = static_cast<int64_t>(values.size()) / row_length;
    const uint64_t row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(row_length));
    std::vector<uint8_t> bytes(row_bytes * static_cast<uint64_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
        // Weights are written as llama-quantize writes them, not as activations are encoded.
        quantize_row_reference(type, values.data() + r * row_length, bytes.data() + static_cast<uint64_t>(r) * row_bytes, row_length);
    }
    return bytes;
}

// Syllable words for the filler tokens, so a random model's output reads as (clearly
// synthetic) words rather than raw bytes.
std::string filler_word(GaussianSource& rng) {
    static constexpr const char* kSyllables[] = {"ka", "lo", "mi", "ne", "ru", "ta", "vo", "shi", "zen", "pa",
                                                 "do", "fi", "gu", "ho", "ji", "ly", "qua", "ser", "tum", "wex"};
    const int count = 1 + static_cast<int>(rng.next_u64() % 3);
    std::string word = "\xC4\xA0";  // U+0120, the byte-level encoding of a leading space
    for (int i = 0; i < count; ++i) word += kSyllables[rng.next_u64() % std::size(kSyllables)];
    return word;
}

void add_byte_level_tokenizer(GgufWriter& writer, int n_vocab, uint64_t seed) {
    constexpr int kSpecial = 2;
    if (n_vocab < 256 + kSpecial) throw InvalidArgument("a byte-level vocabulary needs at least 258 tokens");
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (int b = 0; b < 256; ++b) {
        std::string text;
        tokenizer_detail::append_byte_level(text, std::string(1, static_cast<char>(b)));
        tokens.push_back(text);
        types.push_back(1);  // normal
    }
    tokens.push_back("<s>");
    tokens.push_back("</s>");
    types.insert(types.end(), {3, 3});  // control
    GaussianSource rng(seed ^ 0x5EEDull);
    while (static_cast<int>(tokens.size()) < n_vocab) {
        tokens.push_back(filler_word(rng) + std::to_string(tokens.size()));
        types.push_back(1);
    }
    writer.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
    writer.set("tokenizer.ggml.pre", GgufValue::string("default"));
    writer.set("tokenizer.ggml.tokens", GgufValue::string_array(tokens));
    writer.set("tokenizer.ggml.token_type", GgufValue::i32_array(types));
    writer.set("tokenizer.ggml.merges", GgufValue::string_array({}));
    writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(256));
    writer.set("tokenizer.ggml.eos_token_id", GgufValue::u32(257));
    writer.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
}

// Copies every tokenizer.ggml.* key of `vocab_path`; returns its vocabulary size.
int copy_tokenizer(GgufWriter& writer, const std::string& vocab_path) {
    const GgufFile vocab = GgufFile::open(vocab_path);
    for (const auto& kv : vocab.metadata()) {
        if (kv.key.rfind("tokenizer.", 0) == 0) writer.set(kv.key, kv.value);
    }
    return static_cast<int>(vocab.get_array("tokenizer.ggml.tokens").size());
}

int head_dim_of(const SyntheticModelSpec& s) { return s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head; }

void validate(const SyntheticModelSpec& s) {
    if (s.architecture != "llama" && s.architecture != "qwen2" && s.architecture != "qwen3" && s.architecture != "gemma3") {
        throw InvalidArgument("make-model supports the architectures llama, qwen2, qwen3 and gemma3, not \"" +
                              s.architecture + "\"");
    }
    if (s.n_layer <= 0 || s.n_embd <= 0 || s.n_head <= 0 || s.n_head_kv <= 0 || s.n_ff <= 0 || s.context_length <= 0 ||
        s.head_dim < 0 || s.sliding_window <= 0 || s.sliding_window_pattern < 0) {
        throw InvalidArgument("model dimensions must be positive");
    }
    if ((s.head_dim == 0 && s.n_embd % s.n_head != 0) || s.n_head % s.n_head_kv != 0 || head_dim_of(s) % 2 != 0) {
        throw InvalidArgument("n_embd must split into an even head size, and heads into KV groups");
    }
    // The K-quant mixes fall back to formats of 32-element blocks where 256 do not divide a row.
    const bool mix = s.k_quant_mix != KQuantMix::None;
    const auto block = mix ? 32 : static_cast<int>(ggml_type_traits(s.dtype).block_elements);
    const std::string types =
        mix ? std::string("the ") + k_quant_mix_traits(s.k_quant_mix).name + " mix" : std::string(ggml_type_name(s.dtype));
    if (s.n_embd % block != 0 || s.n_ff % block != 0 || head_dim_of(s) * s.n_head % block != 0) {
        throw InvalidArgument("n_embd, n_ff and the heads' width must be multiples of " + std::to_string(block) + " for " +
                              types);
    }
    for (int d : s.outlier_dims) {
        if (d < 0 || d >= s.n_embd) throw InvalidArgument("outlier dimension " + std::to_string(d) + " is outside n_embd");
    }
}

// The released models' config.json dimensions (or small ones of the same architecture).
struct NamedShape {
    std::string_view preset;
    SyntheticModelSpec spec;
};

const std::vector<NamedShape>& named_shapes() {
    // GCC 12 warns about the members a designated initializer leaves at their defaults.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
    // clang-format off
    static const std::vector<NamedShape> shapes = {
        {"default", {.name = "inferscope-builtin-synthetic"}},
        {"qwen2.5-0.5b", {.architecture = "qwen2", .name = "synthetic-qwen2.5-0.5b-shape", .n_layer = 24, .n_embd = 896,
                          .n_head = 14, .n_head_kv = 2, .n_ff = 4864, .n_vocab = 151936, .context_length = 32768,
                          .rope_freq_base = 1e6f, .rms_norm_eps = 1e-6f, .tied_output = true}},
        {"llama-1b", {.architecture = "llama", .name = "synthetic-llama-3.2-1b-shape", .n_layer = 16, .n_embd = 2048,
                      .n_head = 32, .n_head_kv = 8, .n_ff = 8192, .n_vocab = 128256, .context_length = 131072,
                      .rope_freq_base = 500000.0f, .rms_norm_eps = 1e-5f, .tied_output = true}},
        {"tiny-qwen2", {.architecture = "qwen2", .name = "synthetic-tiny-qwen2", .n_layer = 2, .n_embd = 64, .n_head = 4,
                        .n_head_kv = 2, .n_ff = 160, .n_vocab = 512, .context_length = 512, .rope_freq_base = 1e6f,
                        .rms_norm_eps = 1e-6f, .tied_output = true}},
        {"qwen3-0.6b", {.architecture = "qwen3", .name = "synthetic-qwen3-0.6b-shape", .n_layer = 28, .n_embd = 1024,
                        .n_head = 16, .n_head_kv = 8, .head_dim = 128, .n_ff = 3072, .n_vocab = 151936,
                        .context_length = 40960, .rope_freq_base = 1e6f, .rms_norm_eps = 1e-6f, .tied_output = true}},
        {"gemma3-1b", {.architecture = "gemma3", .name = "synthetic-gemma3-1b-shape", .n_layer = 26, .n_embd = 1152,
                       .n_head = 4, .n_head_kv = 1, .head_dim = 256, .n_ff = 6912, .n_vocab = 262144,
                       .context_length = 32768, .rope_freq_base = 1e6f, .rms_norm_eps = 1e-6f, .tied_output = true,
                       .sliding_window = 512, .sliding_window_pattern = 6}},
        {"llama3.2-1b", {.architecture = "llama", .name = "synthetic-llama3.2-1b-shape", .n_layer = 16, .n_embd = 2048,
                         .n_head = 32, .n_head_kv = 8, .n_ff = 8192, .n_vocab = 128256, .context_length = 131072,
                         .rope_freq_base = 500000.0f, .rms_norm_eps = 1e-5f, .tied_output = true,
                         .llama3_rope_original_context = 8192}},
        {"tiny-qwen3", {.architecture = "qwen3", .name = "synthetic-tiny-qwen3", .n_layer = 2, .n_embd = 64, .n_head = 4,
                        .n_head_kv = 2, .head_dim = 32, .n_ff = 160, .n_vocab = 512, .context_length = 512,
                        .rope_freq_base = 1e6f, .rms_norm_eps = 1e-6f, .tied_output = true}},
        {"tiny-gemma3", {.architecture = "gemma3", .name = "synthetic-tiny-gemma3", .n_layer = 3, .n_embd = 64, .n_head = 4,
                         .n_head_kv = 1, .head_dim = 16, .n_ff = 128, .n_vocab = 512, .context_length = 512,
                         .rope_freq_base = 1e6f, .rms_norm_eps = 1e-6f, .tied_output = true, .sliding_window = 4,
                         .sliding_window_pattern = 3}},
    };
    // clang-format on
#pragma GCC diagnostic pop
    return shapes;
}

}  // namespace

std::vector<std::string_view> synthetic_preset_names() {
    std::vector<std::string_view> names;
    for (const NamedShape& shape : named_shapes()) names.push_back(shape.preset);
    return names;
}

SyntheticModelSpec synthetic_preset(std::string_view name) {
    for (const NamedShape& shape : named_shapes()) {
        if (shape.preset == name) return shape.spec;
    }
    std::string names;
    for (auto n : synthetic_preset_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    throw InvalidArgument("unknown preset \"" + std::string(name) + "\" (available: " + names + ")");
}

namespace {

void add_metadata(GgufWriter& w, const SyntheticModelSpec& s) {
    const std::string a = s.architecture + ".";
    w.set("general.architecture", GgufValue::string(s.architecture));
    w.set("general.name", GgufValue::string(s.name));
    if (s.k_quant_mix != KQuantMix::None) {
        w.set("general.file_type", GgufValue::u32(k_quant_mix_traits(s.k_quant_mix).llama_file_type));
    } else if (const auto file_type = llama_file_type(s.dtype)) {
        w.set("general.file_type", GgufValue::u32(*file_type));
    }
    w.set("inferscope.synthetic", GgufValue::boolean(true));
    w.set("inferscope.synthetic.seed", GgufValue::u64(s.seed));
    w.set(a + "block_count", GgufValue::u32(static_cast<uint32_t>(s.n_layer)));
    w.set(a + "context_length", GgufValue::u32(static_cast<uint32_t>(s.context_length)));
    w.set(a + "embedding_length", GgufValue::u32(static_cast<uint32_t>(s.n_embd)));
    w.set(a + "feed_forward_length", GgufValue::u32(static_cast<uint32_t>(s.n_ff)));
    w.set(a + "attention.head_count", GgufValue::u32(static_cast<uint32_t>(s.n_head)));
    w.set(a + "attention.head_count_kv", GgufValue::u32(static_cast<uint32_t>(s.n_head_kv)));
    w.set(a + "rope.freq_base", GgufValue::f32(s.rope_freq_base));
    w.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(s.rms_norm_eps));
    if (s.head_dim > 0) {
        w.set(a + "attention.key_length", GgufValue::u32(static_cast<uint32_t>(s.head_dim)));
        w.set(a + "attention.value_length", GgufValue::u32(static_cast<uint32_t>(s.head_dim)));
    }
    if (s.architecture == "gemma3") {
        w.set(a + "attention.sliding_window", GgufValue::u32(static_cast<uint32_t>(s.sliding_window)));
        w.set(a + "attention.sliding_window_pattern", GgufValue::u32(static_cast<uint32_t>(s.sliding_window_pattern)));
    }
}

// Llama 3.1's RoPE frequency divisors (factor 32, low/high frequency factors 1 and 4) for a
// model trained on `original_context` tokens: long wavelengths are slowed down by the
// factor, short ones kept, the ones between blended.
std::vector<float> llama3_rope_factors(int head_dim, float base, int original_context) {
    constexpr double kFactor = 32.0, kLowFreqFactor = 1.0, kHighFreqFactor = 4.0;
    const double low_freq_wavelength = original_context / kLowFreqFactor;
    const double high_freq_wavelength = original_context / kHighFreqFactor;
    std::vector<float> factors(static_cast<size_t>(head_dim / 2));
    for (size_t i = 0; i < factors.size(); ++i) {
        const double freq = std::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / head_dim);
        const double wavelength = 2.0 * std::numbers::pi / freq;
        double factor = 1.0;
        if (wavelength > low_freq_wavelength) {
            factor = kFactor;
        } else if (wavelength >= high_freq_wavelength) {
            const double smooth = (original_context / wavelength - kLowFreqFactor) / (kHighFreqFactor - kLowFreqFactor);
            factor = 1.0 / ((1.0 - smooth) / kFactor + smooth);
        }
        factors[i] = static_cast<float>(factor);
    }
    return factors;
}

struct WeightFactory {
    GgufWriter& writer;
    const SyntheticModelSpec& spec;
    GaussianSource rng;

    // The type of the weight `role` ("attn_v", "output", ...) of `layer` (-1: none) with rows of `cols`.
    GgmlType type_of(const std::string& role, int layer, int cols) const {
        return spec.k_quant_mix != KQuantMix::None
                   ? k_quant_mix_type(spec.k_quant_mix, role, layer, spec.n_layer, cols, spec.tied_output)
                   : spec.dtype;
    }
    // A [rows x cols] matrix (GGUF dims [cols, rows]) named "blk.<layer>.<role>.weight" (or
    // "<role>.weight" for layer -1), with outlier rows scaled.
    void matrix(const std::string& role, int layer, int rows, int cols, float std, const std::vector<int>& scaled_rows = {},
                float row_scale = 1.0f) {
        std::vector<float> values = gaussian(rng, static_cast<size_t>(rows) * static_cast<size_t>(cols), 0.0f, std);
        for (int r : scaled_rows) {
            for (int c = 0; c < cols; ++c) values[static_cast<size_t>(r) * static_cast<size_t>(cols) + static_cast<size_t>(c)] *= row_scale;
        }
        const std::string name = (layer < 0 ? "" : "blk." + std::to_string(layer) + ".") + role + ".weight";
        const GgmlType type = type_of(role, layer, cols);
        writer.add_tensor(name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, type, encode(type, values, cols));
    }
    void vector(const std::string& name, int n, float mean, float std, const std::vector<int>& scaled = {},
                float scale = 1.0f) {
        std::vector<float> values = gaussian(rng, static_cast<size_t>(n), mean, std);
        for (int i : scaled) values[static_cast<size_t>(i)] *= scale;
        writer.add_f32_tensor(name, {static_cast<uint64_t>(n)}, values);
    }
};

void add_embedding(WeightFactory& f, const SyntheticModelSpec& s) {
    std::vector<float> values = gaussian(f.rng, static_cast<size_t>(s.n_vocab) * static_cast<size_t>(s.n_embd), 0.0f,
                                         s.embedding_std);
    for (int d : s.outlier_dims) {
        for (int v = 0; v < s.n_vocab; ++v) values[static_cast<size_t>(v) * static_cast<size_t>(s.n_embd) + static_cast<size_t>(d)] *= s.outlier_scale;
    }
    const GgmlType type = f.type_of("token_embd", -1, s.n_embd);
    f.writer.add_tensor("token_embd.weight", {static_cast<uint64_t>(s.n_embd), static_cast<uint64_t>(s.n_vocab)}, type,
                        encode(type, values, s.n_embd));
}

}  // namespace

namespace {

// LLAMA_FTYPE_MOSTLY_Q4_K_M and _Q5_K_M.
constexpr std::array<KQuantMixTraits, 2> kKQuantMixes = {
    KQuantMixTraits{KQuantMix::Q4_K_M, "q4_k_m", GgmlType::Q4_K, GgmlType::Q5_0, 15},
    KQuantMixTraits{KQuantMix::Q5_K_M, "q5_k_m", GgmlType::Q5_K, GgmlType::Q5_1, 17}};

}  // namespace

const KQuantMixTraits* k_quant_mix_named(std::string_view name) {
    for (const KQuantMixTraits& m : kKQuantMixes) {
        if (name == m.name) return &m;
    }
    return nullptr;
}

const KQuantMixTraits& k_quant_mix_traits(KQuantMix mix) {
    for (const KQuantMixTraits& m : kKQuantMixes) {
        if (m.mix == mix) return m;
    }
    throw InvalidArgument("no K-quant mix given");
}

GgmlType k_quant_mix_type(KQuantMix mix, const std::string& tensor, int layer, int n_layer, int cols, bool tied_output) {
    // llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
    const bool more_bits = layer >= 0 && (layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2);
    const bool output = tensor == "output" || (tensor == "token_embd" && tied_output);
    const bool q6_k = output || ((tensor == "attn_v" || tensor == "ffn_down") && more_bits);
    const KQuantMixTraits& traits = k_quant_mix_traits(mix);
    if (cols % 256 == 0) return q6_k ? GgmlType::Q6_K : traits.base;
    return q6_k ? GgmlType::Q8_0 : traits.fallback;
}

GgufWriter build_synthetic_model(const SyntheticModelSpec& input) {
    SyntheticModelSpec s = input;
    GgufWriter writer;
    if (!s.vocab_path.empty()) {
        s.n_vocab = copy_tokenizer(writer, s.vocab_path);
    } else {
        add_byte_level_tokenizer(writer, s.n_vocab, s.seed);
    }
    validate(s);
    add_metadata(writer, s);
    if (!s.chat_template.empty()) writer.set("tokenizer.chat_template", GgufValue::string(s.chat_template));
    const int head_dim = head_dim_of(s);
    const int q_dim = head_dim * s.n_head;
    const int kv_dim = head_dim * s.n_head_kv;
    const bool biases = s.architecture == "qwen2";
    const bool qk_norms = s.architecture == "qwen3" || s.architecture == "gemma3";
    const bool post_norms = s.architecture == "gemma3";
    // The tied output reads the scaled embedding columns too; shrinking the final norm on
    // those dimensions keeps one outlier from deciding every logit.
    const float output_norm_scale = s.outlier_dims.empty() ? 1.0f : 1.0f / (s.outlier_scale * s.outlier_scale);
    const float block_norm_scale = s.outliers_reach_linear_inputs ? 1.0f : 1.0f / s.outlier_scale;

    WeightFactory f{writer, s, GaussianSource(s.seed)};
    add_embedding(f, s);
    f.vector("output_norm.weight", s.n_embd, 1.0f, 0.05f, s.outlier_dims, output_norm_scale);
    if (!s.tied_output) f.matrix("output", -1, s.n_vocab, s.n_embd, s.weight_std);
    if (s.llama3_rope_original_context > 0) {
        writer.add_f32_tensor("rope_freqs.weight", {static_cast<uint64_t>(head_dim / 2)},
                              llama3_rope_factors(head_dim, s.rope_freq_base, s.llama3_rope_original_context));
    }
    for (int l = 0; l < s.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        f.vector(p + "attn_norm.weight", s.n_embd, 1.0f, 0.05f, s.outlier_dims, block_norm_scale);
        f.matrix("attn_q", l, q_dim, s.n_embd, s.weight_std);
        f.matrix("attn_k", l, kv_dim, s.n_embd, s.weight_std);
        f.matrix("attn_v", l, kv_dim, s.n_embd, s.weight_std);
        if (biases) {
            f.vector(p + "attn_q.bias", q_dim, 0.0f, s.weight_std);
            f.vector(p + "attn_k.bias", kv_dim, 0.0f, s.weight_std);
            f.vector(p + "attn_v.bias", kv_dim, 0.0f, s.weight_std);
        }
        f.matrix("attn_output", l, s.n_embd, q_dim, s.weight_std);
        if (qk_norms) {
            f.vector(p + "attn_q_norm.weight", head_dim, 1.0f, 0.05f);
            f.vector(p + "attn_k_norm.weight", head_dim, 1.0f, 0.05f);
        }
        if (post_norms) f.vector(p + "post_attention_norm.weight", s.n_embd, 1.0f, 0.05f);
        f.vector(p + "ffn_norm.weight", s.n_embd, 1.0f, 0.05f, s.outlier_dims, block_norm_scale);
        f.matrix("ffn_gate", l, s.n_ff, s.n_embd, s.weight_std);
        f.matrix("ffn_up", l, s.n_ff, s.n_embd, s.weight_std);
        f.matrix("ffn_down", l, s.n_embd, s.n_ff, s.weight_std, s.outlier_dims, s.outlier_scale);
        if (post_norms) f.vector(p + "post_ffw_norm.weight", s.n_embd, 1.0f, 0.05f);
    }
    return writer;
}

}  // namespace inferscope
