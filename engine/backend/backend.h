#pragma once
// The interface between the runtime and a compute device. A backend owns the KV storage
// and runs whole forward passes; the runtime owns the block bookkeeping (KvBlockPool) and
// everything above it. The CPU backend is the reference; the Vulkan backend (gpu/)
// implements the same interface.
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/backend/activation_precision.h"
#include "engine/backend/activation_tap.h"
#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/kv/kv_cache.h"
#include "engine/backend/step_event.h"

namespace inferscope {

class Model;
struct ModelConfig;

// InvalidArgument unless `layout` holds every layer of `config` with its KV heads.
void check_kv_layout(const ModelConfig& config, const KvCacheLayout& layout);

class Backend {
public:
    virtual ~Backend() = default;

    virtual std::string name() const = 0;

    // Allocates storage for every block of both groups of `layout` (a layer's K and V live
    // in its group's blocks); CapacityError when it cannot be met.
    virtual void allocate_kv(const KvCacheLayout& layout) = 0;

    // Runs the model on `tokens`. Each token's K and V are written at its position in its
    // sequence's blocks of each layer's group (the caller has grown the sequences in `cache`
    // to cover them), and it attends to positions 0..pos of its own sequence (a local layer:
    // the last sliding_window of them). Writes one row of n_vocab logits per token with
    // output = true, in batch order, to `logits`.
    virtual void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) = 0;

    // Copies whole blocks of one group (its every layer, K and V) from src to dst: the copy
    // on write of a block shared between sequences, before one of them writes into it.
    virtual void copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) = 0;

    // Observer of named intermediate tensors; nullptr (the default) costs nothing.
    virtual void set_activation_tap(ActivationTap* tap) = 0;

    // GPU time per kind of operation in the last forward(), from device timestamps; empty
    // for backends without them (the CPU).
    virtual std::vector<OpTime> last_forward_gpu_times() const { return {}; }
    // What the last forward() submitted to the device; nullopt for backends without one (the CPU).
    virtual std::optional<DeviceSubmission> last_forward_submission() const { return std::nullopt; }

    // The lengths of successive passes of one sequence (each wanting its last token's logits)
    // whose first run makes a one-time cost, such as a device compiling its kernels, that
    // InferenceSession::warm_up takes instead of the first request. Empty (the default): the
    // first run of every shape costs what later ones do.
    virtual std::vector<int> warm_up_pass_tokens() const { return {}; }
    // After those passes: makes that one-time cost of the other passes requests may run without
    // running them, where the backend can (InferenceSession::warm_up): prompts of one sequence up
    // to `most_tokens` long, and passes wanting logits for up to `most_logit_rows` tokens (a
    // batch of several sequences, a speculative verification). Nothing by default.
    virtual void prepare_passes(int most_tokens, int most_logit_rows) {
        (void)most_tokens;
        (void)most_logit_rows;
    }

    // Precision of the activations entering the linear layers (F32 by default). A backend
    // without INT8 activations refuses the others.
    virtual void set_activation_precision(const ActivationPrecision& precision) {
        if (!precision.is_f32()) {
            throw UnsupportedError(name() + ": activations " + activation_precision_name(precision) +
                                   " are not supported (only f32)");
        }
    }
};

}  // namespace inferscope
