#include "engine/instruments/kv_accounting.h"

#include <algorithm>
#include <charconv>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

int parse_positive(std::string_view text, const std::string& entry) {
    int value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || value < 1) {
        throw InvalidArgument("bad layout '" + entry + "': expected USERSxTOKENS with positive integers, e.g. 32x2048");
    }
    return value;
}

// Feeds `tokens` token ids to the sequence in passes of at most 512 (only the last wants logits).
void run_tokens(InferenceSession& session, SeqId seq, int tokens) {
    constexpr int kPassTokens = 512;
    const int n_vocab = session.model().config().n_vocab;
    Batch batch;
    for (int start = 0; start < tokens; start += kPassTokens) {
        batch.clear();
        for (int i = start; i < std::min(tokens, start + kPassTokens); ++i) {
            batch.push_back({static_cast<TokenId>(i % n_vocab), seq, i, i == tokens - 1});
        }
        session.decode(batch);
    }
}

}  // namespace

std::vector<KvUserLayout> parse_kv_user_layouts(const std::string& text) {
    std::vector<KvUserLayout> layouts;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string entry = text.substr(start, comma - start);
        const size_t x = entry.find('x');
        if (x == std::string::npos) {
            throw InvalidArgument("bad layout '" + entry + "': expected USERSxTOKENS, e.g. 32x2048");
        }
        layouts.push_back({parse_positive(std::string_view(entry).substr(0, x), entry),
                           parse_positive(std::string_view(entry).substr(x + 1), entry)});
        start = comma + 1;
    }
    return layouts;
}

std::vector<KvLayoutRow> kv_layout_rows(double bytes_per_token, std::span<const KvUserLayout> layouts) {
    std::vector<KvLayoutRow> rows;
    for (const KvUserLayout& l : layouts) {
        const int64_t tokens = int64_t{l.users} * l.tokens_per_user;
        rows.push_back({l, tokens, static_cast<double>(tokens) * bytes_per_token});
    }
    return rows;
}

std::vector<KvGroupUsage> kv_group_usage(const KvCache& cache) {
    const auto usage = [](KvGroup group, const KvBlockPool& pool) {
        return KvGroupUsage{group,
                            pool.layout().n_layer,
                            pool.layout().window_tokens,
                            pool.layout().bytes_per_token(),
                            pool.layout().n_blocks,
                            pool.layout().pool_bytes(),
                            pool.used_block_count(),
                            pool.bytes_in_use(),
                            pool.bytes_reserved()};
    };
    std::vector<KvGroupUsage> groups = {usage(KvGroup::Global, cache.global())};
    if (cache.local() != nullptr) groups.push_back(usage(KvGroup::Local, *cache.local()));
    return groups;
}

KvAccountingReport measure_kv_accounting(InferenceSession& session, int tokens, std::span<const KvUserLayout> layouts) {
    if (tokens < 1) throw InvalidArgument("the KV measurement needs at least one token (--tokens)");
    if (tokens > session.context_size()) {
        throw CapacityError(std::to_string(tokens) + " tokens do not fit in the session's context of " +
                            std::to_string(session.context_size()) + " tokens (raise -c or lower --tokens)");
    }
    const ModelConfig& config = session.model().config();
    const KvCache& pool = session.kv_cache();
    KvAccountingReport r;
    r.dtype = pool.layout().dtype();
    r.n_layer = config.n_layer;
    r.n_head = config.n_head;
    r.n_head_kv = config.n_head_kv;
    r.head_dim = config.head_dim;
    r.formula_bytes_per_token = formula_kv_bytes_per_token(config, r.dtype);
    r.tokens = tokens;
    r.formula_bytes = tokens * r.formula_bytes_per_token;
    r.layer_tensor_bytes = static_cast<uint64_t>(config.n_head_kv) * static_cast<uint64_t>(tokens) *
                           static_cast<uint64_t>(config.head_dim) * static_cast<uint64_t>(kv_dtype_bytes(r.dtype));
    r.block_tokens = pool.layout().block_tokens();
    const std::vector<KvGroupUsage> before = kv_group_usage(pool);
    {
        ScopedSequence seq(session);
        run_tokens(session, seq.id(), tokens);
        r.pool_groups = kv_group_usage(pool);
    }
    for (size_t g = 0; g < r.pool_groups.size(); ++g) {
        KvGroupUsage& u = r.pool_groups[g];
        u.bytes_in_use -= before[g].bytes_in_use;
        u.bytes_reserved -= before[g].bytes_reserved;
        u.blocks_used -= before[g].blocks_used;
        r.allocator_bytes_in_use += u.bytes_in_use;
        r.allocator_bytes_reserved += u.bytes_reserved;
        r.blocks_used += u.blocks_used;
    }
    r.block_rounding_waste_bytes = r.allocator_bytes_reserved - r.allocator_bytes_in_use;
    r.layouts = kv_layout_rows(r.formula_bytes_per_token, layouts);
    r.what_if = kv_attention_what_if(config, r.dtype);
    r.window = kv_window_split(config, r.dtype, tokens);
    return r;
}

}  // namespace inferscope
