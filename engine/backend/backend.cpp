#include "engine/backend/backend.h"

#include "engine/model/model.h"

namespace inferscope {

void check_kv_layout(const ModelConfig& config, const KvCacheLayout& layout) {
    const auto matches = [&](const KvLayout& group) {
        return group.n_layer == 0 || (group.n_head_kv == config.n_head_kv && group.head_dim == config.head_dim);
    };
    if (layout.global.n_layer + layout.local.n_layer != config.n_layer ||
        static_cast<int>(layout.layer_group.size()) != config.n_layer || !matches(layout.global) || !matches(layout.local)) {
        throw InvalidArgument("KV layout does not match the model's layers and KV heads");
    }
}

}  // namespace inferscope
