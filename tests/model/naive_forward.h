#pragma once
// A deliberately naive reference forward pass for decoder-only transformers ("llama",
// "qwen2", "qwen3" and "gemma3" GGUF architectures), in the spirit of llama2.c's run.c: every weight is converted
// to double once at load time, every step is a plain loop in double precision, and every
// call recomputes the whole sequence from scratch (no KV cache, no batching, no threads).
//
// It exists only to check the real engine in tests, so it shares no code with it apart from
// the GGUF reader (engine/gguf/gguf_file.h) and the fp16/bf16 conversions (engine/core/fp16.h).
// Conventions follow GGUF/llama.cpp; see naive_forward.cpp for the exact semantics.
#include <cstdint>
#include <string>
#include <vector>

namespace inferscope {
class GgufFile;
struct GgufTensorInfo;
}  // namespace inferscope

namespace inferscope::reference {

enum class NaiveRopeStyle {
    Normal,  // llama: rotates adjacent pairs (2i, 2i+1)
    Neox,    // qwen2: rotates pairs (i, i + rope_dim/2)
};

struct NaiveConfig {
    std::string arch;        // "llama", "qwen2", "qwen3" or "gemma3"
    int n_layer = 0;         // {arch}.block_count
    int n_embd = 0;          // {arch}.embedding_length
    int n_head = 0;          // {arch}.attention.head_count
    int n_head_kv = 0;       // {arch}.attention.head_count_kv (default n_head)
    int head_dim = 0;        // {arch}.attention.key_length (default n_embd / n_head)
    int n_ff = 0;            // {arch}.feed_forward_length
    int n_vocab = 0;         // token_embd.weight dims[1]
    int n_ctx = 0;           // {arch}.context_length (informational; not enforced)
    int rope_dim = 0;        // {arch}.rope.dimension_count (default head_dim)
    double rms_eps = 0.0;    // {arch}.attention.layer_norm_rms_epsilon
    double rope_base = 0.0;  // {arch}.rope.freq_base (default 10000)
    NaiveRopeStyle rope_style = NaiveRopeStyle::Normal;
    bool qk_norm = false;        // qwen3, gemma3: RMS norm of each q and k head before RoPE
    bool post_norms = false;     // gemma3: RMS norm of the attention and FFN outputs
    bool gelu = false;           // gemma3: gelu_tanh(gate) * up instead of silu(gate) * up
    double embd_scale = 1.0;     // gemma3: sqrt(n_embd)
    int window = 0;              // gemma3: {arch}.attention.sliding_window
    std::vector<bool> local;     // gemma3: [n_layer] layer il is local iff il % pattern < pattern - 1
    double rope_base_local = 10000.0;  // gemma3: RoPE base of local layers
};

// Matrices are row-major [out][in]: y[o] = sum_i W[o*in + i] * x[i]. Biases are empty when
// the file has none.
struct NaiveLayer {
    std::vector<double> attn_norm;  // [n_embd]
    std::vector<double> wq;         // [n_head*head_dim][n_embd]
    std::vector<double> bq;         // [n_head*head_dim] or empty
    std::vector<double> wk;         // [n_head_kv*head_dim][n_embd]
    std::vector<double> bk;         // [n_head_kv*head_dim] or empty
    std::vector<double> wv;         // [n_head_kv*head_dim][n_embd]
    std::vector<double> bv;         // [n_head_kv*head_dim] or empty
    std::vector<double> wo;         // [n_embd][n_head*head_dim]
    std::vector<double> q_norm;     // [head_dim] or empty
    std::vector<double> k_norm;     // [head_dim] or empty
    std::vector<double> post_attention_norm;  // [n_embd] or empty
    std::vector<double> post_ffw_norm;        // [n_embd] or empty
    std::vector<double> ffn_norm;   // [n_embd]
    std::vector<double> w_gate;     // [n_ff][n_embd]
    std::vector<double> w_up;       // [n_ff][n_embd]
    std::vector<double> w_down;     // [n_embd][n_ff]
};

struct NaiveModel {
    NaiveConfig config;
    std::vector<double> token_embd;   // [n_vocab][n_embd]; row v is token v
    std::vector<double> output_norm;  // [n_embd]
    std::vector<double> output;       // [n_vocab][n_embd], or empty when tied to token_embd
    std::vector<double> rope_freqs;   // [rope_dim / 2] divisors of each pair's angle, or empty
    std::vector<NaiveLayer> layers;   // [n_layer]

    // The output projection actually used: `output`, or `token_embd` when tied.
    const std::vector<double>& output_matrix() const { return output.empty() ? token_embd : output; }
};

// Converts one F32/F16/BF16 tensor to doubles in storage order; throws std::runtime_error for
// any other type.
std::vector<double> naive_tensor_to_double(const GgufTensorInfo& tensor);

// Loads arch "llama", "qwen2", "qwen3" or "gemma3" with F32/F16/BF16 tensors; throws std::runtime_error for
// anything else (other architectures, other tensor types, missing tensors, wrong shapes).
NaiveModel load_naive_model(const GgufFile& file);

// Full recomputation from scratch: logits (n_vocab doubles) at every position of `tokens`
// (positions 0..n-1, one sequence, causal attention). Throws std::runtime_error for a token id
// outside [0, n_vocab).
std::vector<std::vector<double>> naive_logits(const NaiveModel& model, const std::vector<int32_t>& tokens);

// Greedy continuation: recomputes the whole sequence for each new token and appends the
// argmax of the last position's logits (ties -> lowest id). Returns the n_new new ids only.
std::vector<int32_t> naive_greedy(const NaiveModel& model, std::vector<int32_t> prompt, int n_new);

// Index of the largest value (ties -> lowest index); -1 for an empty vector.
int32_t naive_argmax(const std::vector<double>& values);

}  // namespace inferscope::reference
