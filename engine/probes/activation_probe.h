#pragma once
// Probes: subscriptions to the named intermediate tensors a backend publishes through its
// ActivationTap (engine/backend/activation_tap.h). A probe is an ActivationTap that passes
// only the tensors it subscribed to, by kind ("resid", "ffn_hidden", ...) and optionally by
// layer, to callbacks, which typically feed streaming reducers so that nothing but their
// running state outlives the call.
//
// Cost: a backend with no tap attached does not even build the tensor names, so attaching
// a probe only for the passes being analysed (ProbeAttachment) keeps every other pass at
// zero cost.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend/activation_tap.h"

namespace inferscope {

class Backend;
struct ModelConfig;

// The per-block tensor kinds a backend publishes as "blk.N.<kind>", in forward order.
const std::vector<std::string_view>& block_tensor_kinds();

// Throws InvalidArgument naming the kind and listing the known ones when `kind` is not a
// per-block tensor kind.
void require_block_tensor_kind(std::string_view kind);

// Columns of a per-block tensor kind for this model (n_embd, q_dim, kv_dim or n_ff).
int block_tensor_width(const ModelConfig& config, std::string_view kind);

// The kind of a published tensor name: "resid" for "blk.3.resid", the whole name outside
// the blocks ("token_embd", "output_norm").
std::string_view tensor_kind(std::string_view name);

class ActivationProbe : public ActivationTap {
public:
    using Callback = std::function<void(const NamedTensor&)>;

    // Calls `callback` for every tensor of `kind` (any name on_tensor can receive, including
    // "token_embd" and "output_norm"), in every layer or only in `layer`.
    void subscribe(std::string kind, std::optional<int> layer, Callback callback);

    void on_tensor(const NamedTensor& tensor) override;

private:
    struct Subscription {
        std::string kind;
        std::optional<int> layer;
        Callback callback;
    };
    std::vector<Subscription> subscriptions_;
};

// Attaches a tap to a backend for the lifetime of this object, then detaches it (a tap
// that is destroyed while still attached would be called dangling).
class ProbeAttachment {
public:
    ProbeAttachment(Backend& backend, ActivationTap& tap);
    ~ProbeAttachment();
    ProbeAttachment(const ProbeAttachment&) = delete;
    ProbeAttachment& operator=(const ProbeAttachment&) = delete;

private:
    Backend& backend_;
};

}  // namespace inferscope
