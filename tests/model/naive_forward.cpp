// Naive double-precision reference forward pass. See naive_forward.h.
//
// Semantics (GGUF / llama.cpp conventions):
//   x      = token_embd[token]                                   per position
//          * sqrt(n_embd)                                       (gemma3)
//   for each layer:
//     h    = rmsnorm(x) * attn_norm
//     q,k,v = Wq h + bq, Wk h + bk, Wv h + bv                   (biases: qwen2 only)
//     q,k  = rmsnorm(head) * q_norm | k_norm for every head      (qwen3, gemma3)
//     q,k  = rope(q, pos), rope(k, pos)                         (normal for llama, NEOX for the
//            others; theta divided by rope_freqs[i] when present; gemma3's local layers
//            use base 10000)
//     a    = softmax(q.k / sqrt(head_dim)) v over positions <= pos (gemma3's local layers:
//            the last `window` positions), query head h -> kv head h / (n_head / n_head_kv)
//     x   += Wo a                         (gemma3: rmsnorm(Wo a) * post_attention_norm)
//     h    = rmsnorm(x) * ffn_norm
//     x   += Wdown (silu(Wgate h) * Wup h)  (gemma3: gelu_tanh, and the post_ffw_norm)
//   logits = Wout (rmsnorm(x) * output_norm)                    (Wout = token_embd when tied)
// rmsnorm(x) = x / sqrt(mean(x^2) + eps).
#include "naive_forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/core/fp16.h"
#include "engine/formats/quant.h"
#include "engine/gguf/gguf_file.h"

namespace inferscope::reference {
namespace {

using Vec = std::vector<double>;        // one vector, e.g. [n_embd]
using Rows = std::vector<std::vector<double>>;  // one vector per position, [n_tokens][...]

[[noreturn]] void fail(const std::string& message) {
    throw std::runtime_error("naive reference model: " + message);
}

// ---------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------

std::string dims_string(const std::vector<uint64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

int positive_int(uint64_t value, const std::string& key) {
    if (value == 0 || value > (uint64_t{1} << 30)) fail(key + " = " + std::to_string(value) + " is out of range");
    return static_cast<int>(value);
}

// The tensor `name` with ggml dims exactly `dims`, as doubles; empty if absent and optional.
Vec load_tensor(const GgufFile& file, const std::string& name, const std::vector<uint64_t>& dims,
                bool optional = false) {
    const GgufTensorInfo* tensor = file.find_tensor(name);
    if (tensor == nullptr) {
        if (optional) return {};
        fail("tensor " + name + " is missing");
    }
    if (tensor->dims.to_vector() != dims) {
        fail("tensor " + name + " has dims " + dims_string(tensor->dims.to_vector()) + ", expected " + dims_string(dims));
    }
    return naive_tensor_to_double(*tensor);
}

// Reads the hyper-parameters; n_vocab comes from token_embd.weight.
NaiveConfig read_config(const GgufFile& file) {
    NaiveConfig c;
    c.arch = file.get_string("general.architecture");
    if (c.arch != "llama" && c.arch != "qwen2" && c.arch != "qwen3" && c.arch != "gemma3") {
        fail("unsupported architecture '" + c.arch + "' (only llama, qwen2, qwen3 and gemma3)");
    }
    c.rope_style = c.arch == "llama" ? NaiveRopeStyle::Normal : NaiveRopeStyle::Neox;
    c.qk_norm = c.arch == "qwen3" || c.arch == "gemma3";
    c.post_norms = c.gelu = c.arch == "gemma3";
    const std::string p = c.arch + ".";
    c.n_layer = positive_int(file.get_u64(p + "block_count"), p + "block_count");
    c.n_embd = positive_int(file.get_u64(p + "embedding_length"), p + "embedding_length");
    c.n_head = positive_int(file.get_u64(p + "attention.head_count"), p + "attention.head_count");
    c.n_head_kv = positive_int(file.get_u64(p + "attention.head_count_kv", static_cast<uint64_t>(c.n_head)),
                               p + "attention.head_count_kv");
    c.n_ff = positive_int(file.get_u64(p + "feed_forward_length"), p + "feed_forward_length");
    c.n_ctx = positive_int(file.get_u64(p + "context_length"), p + "context_length");
    c.rms_eps = file.get_f64(p + "attention.layer_norm_rms_epsilon");
    c.rope_base = file.get_f64(p + "rope.freq_base", 10000.0);
    if (c.n_head % c.n_head_kv != 0) fail("head_count is not a multiple of head_count_kv");
    c.head_dim = static_cast<int>(file.get_u64(p + "attention.key_length", static_cast<uint64_t>(c.n_embd / c.n_head)));
    if (c.arch == "gemma3") {
        c.embd_scale = std::sqrt(static_cast<double>(c.n_embd));
        c.window = positive_int(file.get_u64(p + "attention.sliding_window"), p + "attention.sliding_window");
        const uint64_t pattern = file.get_u64(p + "attention.sliding_window_pattern", 6);
        for (int il = 0; il < c.n_layer; ++il) c.local.push_back(static_cast<uint64_t>(il) % pattern < pattern - 1);
    }
    c.rope_dim = positive_int(file.get_u64(p + "rope.dimension_count", static_cast<uint64_t>(c.head_dim)),
                              p + "rope.dimension_count");
    if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0) fail("rope.dimension_count must be even and <= head_dim");
    const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
    if (embd == nullptr || embd->dims.size() != 2) fail("token_embd.weight is missing or not 2-D");
    c.n_vocab = positive_int(embd->dims[1], "token_embd.weight dims[1]");
    return c;
}

NaiveLayer load_layer(const GgufFile& file, const NaiveConfig& c, int index) {
    const std::string p = "blk." + std::to_string(index) + ".";
    const auto embd = static_cast<uint64_t>(c.n_embd);
    const auto q_dim = static_cast<uint64_t>(c.n_head * c.head_dim);
    const auto kv_dim = static_cast<uint64_t>(c.n_head_kv * c.head_dim);
    const auto ff = static_cast<uint64_t>(c.n_ff);
    NaiveLayer l;
    l.attn_norm = load_tensor(file, p + "attn_norm.weight", {embd});
    l.wq = load_tensor(file, p + "attn_q.weight", {embd, q_dim});
    l.bq = load_tensor(file, p + "attn_q.bias", {q_dim}, true);
    l.wk = load_tensor(file, p + "attn_k.weight", {embd, kv_dim});
    l.bk = load_tensor(file, p + "attn_k.bias", {kv_dim}, true);
    l.wv = load_tensor(file, p + "attn_v.weight", {embd, kv_dim});
    l.bv = load_tensor(file, p + "attn_v.bias", {kv_dim}, true);
    l.wo = load_tensor(file, p + "attn_output.weight", {q_dim, embd});
    const auto head = static_cast<uint64_t>(c.head_dim);
    l.q_norm = load_tensor(file, p + "attn_q_norm.weight", {head}, !c.qk_norm);
    l.k_norm = load_tensor(file, p + "attn_k_norm.weight", {head}, !c.qk_norm);
    l.post_attention_norm = load_tensor(file, p + "post_attention_norm.weight", {embd}, !c.post_norms);
    l.post_ffw_norm = load_tensor(file, p + "post_ffw_norm.weight", {embd}, !c.post_norms);
    l.ffn_norm = load_tensor(file, p + "ffn_norm.weight", {embd});
    l.w_gate = load_tensor(file, p + "ffn_gate.weight", {embd, ff});
    l.w_up = load_tensor(file, p + "ffn_up.weight", {embd, ff});
    l.w_down = load_tensor(file, p + "ffn_down.weight", {ff, embd});
    return l;
}

// ---------------------------------------------------------------------------------------
// Forward steps
// ---------------------------------------------------------------------------------------

// out = x / sqrt(mean(x^2) + eps) * w.   x, w, out: [n]
Vec rmsnorm(const Vec& x, const Vec& w, double eps) {
    double sum_sq = 0.0;
    for (double v : x) sum_sq += v * v;
    const double scale = 1.0 / std::sqrt(sum_sq / static_cast<double>(x.size()) + eps);
    Vec out(x.size());  // [n]
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * w[i];
    return out;
}

// y[o] = sum_i w[o*in + i] * x[i] (+ bias[o] when bias is non-empty).
// w: [out_dim][in_dim], x: [in_dim], bias: [out_dim] or empty, y: [out_dim]
Vec matmul(const Vec& w, const Vec& x, size_t out_dim, const Vec& bias = {}) {
    const size_t in_dim = x.size();
    Vec y(out_dim);  // [out_dim]
    for (size_t o = 0; o < out_dim; ++o) {
        const double* row = w.data() + o * in_dim;  // [in_dim]; raw pointers keep Debug builds fast
        const double* xp = x.data();                // [in_dim]
        double acc = 0.0;
        for (size_t i = 0; i < in_dim; ++i) acc += row[i] * xp[i];
        y[o] = bias.empty() ? acc : acc + bias[o];
    }
    return y;
}

// Rotates each head of v (in place) by position pos. v: [n_heads][head_dim].
// Pair j (0 <= j < rope_dim/2) turns by angle pos * base^(-2j/rope_dim); it is the elements
// (2j, 2j+1) in normal style and (j, j + rope_dim/2) in NEOX style. Dims >= rope_dim are kept.
void apply_rope(Vec& v, int n_heads, const NaiveConfig& c, double base, const Vec& freq_divisors, int pos) {
    const int half = c.rope_dim / 2;
    for (int h = 0; h < n_heads; ++h) {
        double* head = v.data() + static_cast<size_t>(h) * c.head_dim;  // [head_dim]
        for (int j = 0; j < half; ++j) {
            const double divisor = freq_divisors.empty() ? 1.0 : freq_divisors[static_cast<size_t>(j)];
            const double theta = pos * std::pow(base, -2.0 * j / c.rope_dim) / divisor;
            const double cos_t = std::cos(theta);
            const double sin_t = std::sin(theta);
            const int a = c.rope_style == NaiveRopeStyle::Normal ? 2 * j : j;
            const int b = c.rope_style == NaiveRopeStyle::Normal ? 2 * j + 1 : j + half;
            const double x0 = head[a];
            const double x1 = head[b];
            head[a] = x0 * cos_t - x1 * sin_t;
            head[b] = x0 * sin_t + x1 * cos_t;
        }
    }
}

// Causal multi-head attention with grouped KV heads, for every query position.
// q: [n][n_head*head_dim], k, v: [n][n_head_kv*head_dim]; returns [n][n_head*head_dim].
// `window` > 0: a query at t sees only the positions t - window < s <= t.
Rows attention(const Rows& q, const Rows& k, const Rows& v, const NaiveConfig& c, int window) {
    const size_t n = q.size();
    const int group = c.n_head / c.n_head_kv;  // query heads per KV head
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    Rows out(n, Vec(static_cast<size_t>(c.n_head) * c.head_dim, 0.0));  // [n][n_head*head_dim]
    for (size_t t = 0; t < n; ++t) {
        for (int h = 0; h < c.n_head; ++h) {
            const size_t q_off = static_cast<size_t>(h) * c.head_dim;
            const size_t kv_off = static_cast<size_t>(h / group) * c.head_dim;
            Vec scores(t + 1, -INFINITY);  // [t+1]: one per key position, -inf where hidden
            double max_score = -INFINITY;
            const size_t first = window > 0 && t + 1 > static_cast<size_t>(window) ? t + 1 - static_cast<size_t>(window) : 0;
            for (size_t s = first; s <= t; ++s) {
                double dot = 0.0;
                for (int d = 0; d < c.head_dim; ++d) dot += q[t][q_off + d] * k[s][kv_off + d];
                scores[s] = dot * scale;
                max_score = std::max(max_score, scores[s]);
            }
            double denom = 0.0;
            for (double& sc : scores) denom += (sc = std::exp(sc - max_score));
            for (size_t s = 0; s <= t; ++s) {
                const double p = scores[s] / denom;
                for (int d = 0; d < c.head_dim; ++d) out[t][q_off + d] += p * v[s][kv_off + d];
            }
        }
    }
    return out;
}

// Normalises each head of v (in place) with the shared per-head weight w.  v: [n_heads][head_dim]
void norm_heads(Vec& v, const Vec& w, const NaiveConfig& c) {
    for (size_t first = 0; first < v.size(); first += static_cast<size_t>(c.head_dim)) {
        const Vec head(v.begin() + static_cast<ptrdiff_t>(first), v.begin() + static_cast<ptrdiff_t>(first) + c.head_dim);
        const Vec normed = rmsnorm(head, w, c.rms_eps);
        std::copy(normed.begin(), normed.end(), v.begin() + static_cast<ptrdiff_t>(first));
    }
}

// x += post(Wo attention(rope(norm(Wq h + bq)), rope(norm(Wk h + bk)), Wv h + bv)), h = rmsnorm(x) * attn_norm.
// x: [n][n_embd], updated in place.
void attention_block(Rows& x, const NaiveModel& model, size_t layer) {
    const NaiveConfig& c = model.config;
    const NaiveLayer& l = model.layers[layer];
    const bool local = !c.local.empty() && c.local[layer];
    const double rope_base = local ? c.rope_base_local : c.rope_base;
    const size_t n = x.size();
    const size_t q_dim = static_cast<size_t>(c.n_head) * c.head_dim;
    const size_t kv_dim = static_cast<size_t>(c.n_head_kv) * c.head_dim;
    Rows q(n), k(n), v(n);  // [n][q_dim], [n][kv_dim], [n][kv_dim]
    for (size_t t = 0; t < n; ++t) {
        const Vec h = rmsnorm(x[t], l.attn_norm, c.rms_eps);  // [n_embd]
        q[t] = matmul(l.wq, h, q_dim, l.bq);
        k[t] = matmul(l.wk, h, kv_dim, l.bk);
        v[t] = matmul(l.wv, h, kv_dim, l.bv);
        if (c.qk_norm) {
            norm_heads(q[t], l.q_norm, c);
            norm_heads(k[t], l.k_norm, c);
        }
        apply_rope(q[t], c.n_head, c, rope_base, model.rope_freqs, static_cast<int>(t));
        apply_rope(k[t], c.n_head_kv, c, rope_base, model.rope_freqs, static_cast<int>(t));
    }
    const Rows a = attention(q, k, v, c, local ? c.window : 0);  // [n][q_dim]
    for (size_t t = 0; t < n; ++t) {
        Vec o = matmul(l.wo, a[t], static_cast<size_t>(c.n_embd));  // [n_embd]
        if (c.post_norms) o = rmsnorm(o, l.post_attention_norm, c.rms_eps);
        for (int i = 0; i < c.n_embd; ++i) x[t][i] += o[i];
    }
}

double silu(double z) { return z / (1.0 + std::exp(-z)); }

double gelu_tanh(double z) {
    const double sqrt_2_over_pi = std::sqrt(2.0 / 3.14159265358979323846);
    return 0.5 * z * (1.0 + std::tanh(sqrt_2_over_pi * (z + 0.044715 * z * z * z)));
}

// x += post(Wdown (act(Wgate h) * Wup h)), h = rmsnorm(x) * ffn_norm.  x: [n][n_embd], in place.
void ffn_block(Rows& x, const NaiveLayer& l, const NaiveConfig& c) {
    for (Vec& row : x) {
        const Vec h = rmsnorm(row, l.ffn_norm, c.rms_eps);                   // [n_embd]
        Vec gate = matmul(l.w_gate, h, static_cast<size_t>(c.n_ff));         // [n_ff]
        const Vec up = matmul(l.w_up, h, static_cast<size_t>(c.n_ff));       // [n_ff]
        for (int i = 0; i < c.n_ff; ++i) gate[i] = (c.gelu ? gelu_tanh(gate[i]) : silu(gate[i])) * up[i];
        Vec down = matmul(l.w_down, gate, static_cast<size_t>(c.n_embd));  // [n_embd]
        if (c.post_norms) down = rmsnorm(down, l.post_ffw_norm, c.rms_eps);
        for (int i = 0; i < c.n_embd; ++i) row[i] += down[i];
    }
}

// Final hidden states after all layers and the output norm: [n][n_embd].
Rows final_hidden(const NaiveModel& model, const std::vector<int32_t>& tokens) {
    const NaiveConfig& c = model.config;
    Rows x(tokens.size());  // [n][n_embd]: the residual stream
    for (size_t t = 0; t < tokens.size(); ++t) {
        const int32_t id = tokens[t];
        if (id < 0 || id >= c.n_vocab) {
            fail("token id " + std::to_string(id) + " outside [0, " + std::to_string(c.n_vocab) + ")");
        }
        const auto begin = model.token_embd.begin() + static_cast<ptrdiff_t>(id) * c.n_embd;
        x[t].assign(begin, begin + c.n_embd);
        for (double& value : x[t]) value *= c.embd_scale;
    }
    for (size_t layer = 0; layer < model.layers.size(); ++layer) {
        attention_block(x, model, layer);
        ffn_block(x, model.layers[layer], c);
    }
    for (Vec& row : x) row = rmsnorm(row, model.output_norm, c.rms_eps);
    return x;
}

// logits = Wout h.  h: [n_embd]; returns [n_vocab].
Vec project_logits(const NaiveModel& model, const Vec& h) {
    return matmul(model.output_matrix(), h, static_cast<size_t>(model.config.n_vocab));
}

}  // namespace

std::vector<double> naive_tensor_to_double(const GgufTensorInfo& tensor) {
    const size_t n = tensor.element_count;
    const uint8_t* bytes = tensor.data.data();
    size_t element_bytes = 0;
    switch (tensor.type) {
        case GgmlType::F32: element_bytes = 4; break;
        case GgmlType::F16: case GgmlType::BF16: element_bytes = 2; break;
        case GgmlType::Q8_0: case GgmlType::Q4_0: case GgmlType::IQ4_NL: {
            // Block formats: the engine's dequantization (tested bit-exact against ggml in
            // tests/formats), so that this forward differs from the engine only in how
            // activations meet the weights (here in double, there quantized to Q8_0).
            if (tensor.data.size() < ggml_row_bytes(tensor.type, n)) fail("tensor " + tensor.name + " data is truncated");
            std::vector<float> values(n);
            dequantize_row(tensor.type, bytes, values.data(), static_cast<int64_t>(n));
            return Vec(values.begin(), values.end());
        }
        default:
            fail("tensor " + tensor.name + " has type id " + std::to_string(static_cast<uint32_t>(tensor.type)) +
                 "; only F32, F16, BF16, Q8_0, Q4_0 and IQ4_NL are supported");
    }
    if (tensor.data.size() < n * element_bytes) fail("tensor " + tensor.name + " data is truncated");
    Vec out(n);  // [element_count], storage order
    for (size_t i = 0; i < n; ++i) {
        if (tensor.type == GgmlType::F32) {
            float f;
            std::memcpy(&f, bytes + 4 * i, 4);
            out[i] = f;
        } else {
            uint16_t h;
            std::memcpy(&h, bytes + 2 * i, 2);
            out[i] = tensor.type == GgmlType::F16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
        }
    }
    return out;
}

NaiveModel load_naive_model(const GgufFile& file) {
    NaiveModel m;
    m.config = read_config(file);
    const NaiveConfig& c = m.config;
    const auto embd = static_cast<uint64_t>(c.n_embd);
    const auto vocab = static_cast<uint64_t>(c.n_vocab);
    m.token_embd = load_tensor(file, "token_embd.weight", {embd, vocab});
    m.output_norm = load_tensor(file, "output_norm.weight", {embd});
    m.output = load_tensor(file, "output.weight", {embd, vocab}, true);  // absent -> tied
    m.rope_freqs = load_tensor(file, "rope_freqs.weight", {static_cast<uint64_t>(c.rope_dim / 2)}, true);
    m.layers.reserve(static_cast<size_t>(c.n_layer));
    for (int i = 0; i < c.n_layer; ++i) m.layers.push_back(load_layer(file, c, i));
    return m;
}

std::vector<std::vector<double>> naive_logits(const NaiveModel& model, const std::vector<int32_t>& tokens) {
    const Rows h = final_hidden(model, tokens);  // [n][n_embd]
    Rows logits;                                 // [n][n_vocab]
    logits.reserve(h.size());
    for (const Vec& row : h) logits.push_back(project_logits(model, row));
    return logits;
}

std::vector<int32_t> naive_greedy(const NaiveModel& model, std::vector<int32_t> prompt, int n_new) {
    if (prompt.empty()) fail("greedy generation needs a non-empty prompt");
    std::vector<int32_t> generated;
    for (int step = 0; step < n_new; ++step) {
        const Rows h = final_hidden(model, prompt);  // recomputed from scratch every step
        const int32_t next = naive_argmax(project_logits(model, h.back()));
        generated.push_back(next);
        prompt.push_back(next);
    }
    return generated;
}

int32_t naive_argmax(const std::vector<double>& values) {
    int32_t best = values.empty() ? -1 : 0;
    for (size_t i = 1; i < values.size(); ++i) {
        if (values[i] > values[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    }
    return best;
}

}  // namespace inferscope::reference
