#include "engine/probes/activation_probe.h"

#include <algorithm>

#include "engine/backend/backend.h"
#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace inferscope {

const std::vector<std::string_view>& block_tensor_kinds() {
    static const std::vector<std::string_view> kinds = {"attn_in",  "q",        "k",          "v",       "attn_ctx", "attn_out",
                                                        "ffn_in",   "ffn_norm", "ffn_hidden", "ffn_out", "resid"};
    return kinds;
}

void require_block_tensor_kind(std::string_view kind) {
    const auto& kinds = block_tensor_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) return;
    std::string known;
    for (std::string_view k : kinds) known += (known.empty() ? "" : ", ") + std::string(k);
    throw InvalidArgument("unknown tensor \"" + std::string(kind) + "\" (known per-layer tensors: " + known + ")");
}

int block_tensor_width(const ModelConfig& config, std::string_view kind) {
    require_block_tensor_kind(kind);
    if (kind == "q" || kind == "attn_ctx") return config.q_dim();
    if (kind == "k" || kind == "v") return config.kv_dim();
    if (kind == "ffn_hidden") return config.n_ff;
    return config.n_embd;
}

std::string_view tensor_kind(std::string_view name) {
    constexpr std::string_view block_prefix = "blk.";
    if (!name.starts_with(block_prefix)) return name;
    const size_t dot_after_layer = name.find('.', block_prefix.size());
    return dot_after_layer == std::string_view::npos ? name : name.substr(dot_after_layer + 1);
}

void ActivationProbe::subscribe(std::string kind, std::optional<int> layer, Callback callback) {
    subscriptions_.push_back({std::move(kind), layer, std::move(callback)});
}

void ActivationProbe::on_tensor(const NamedTensor& tensor) {
    const std::string_view kind = tensor_kind(tensor.name);
    for (const Subscription& s : subscriptions_) {
        if (s.kind != kind) continue;
        if (s.layer.has_value() && *s.layer != tensor.layer) continue;
        s.callback(tensor);
    }
}

ProbeAttachment::ProbeAttachment(Backend& backend, ActivationTap& tap) : backend_(backend) {
    backend_.set_activation_tap(&tap);
}

ProbeAttachment::~ProbeAttachment() { backend_.set_activation_tap(nullptr); }

}  // namespace inferscope
