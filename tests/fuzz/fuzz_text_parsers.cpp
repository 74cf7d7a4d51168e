// libFuzzer entry point for the small text grammars a user types or a file holds: quantization
// schemes, question batteries, KV user layouts, llama2.c checkpoint headers and tokenizers, and
// what a remote server sends (Prometheus metrics pages, event streams).
// The first byte picks the parser. Each must
// return a result or throw a typed Error; what parses must hold its invariants (a scheme's
// canonical name parses back to the same scheme, its storage is finite and positive; a
// battery has items with answers; a layout has positive sizes).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "engine/convert/llama2c.h"
#include "engine/core/error.h"
#include "engine/eval/battery.h"
#include "engine/instruments/kv_accounting.h"
#include "engine/quant/scheme.h"
#include "engine/remote/prometheus.h"
#include "engine/remote/server_metrics.h"
#include "engine/remote/sse.h"

namespace inferscope {
namespace {

[[noreturn]] void finding(const std::string& what) {
    std::fprintf(stderr, "fuzz_text_parsers finding: %s\n", what.c_str());
    std::abort();
}

void check_scheme(std::string_view text) {
    QuantScheme scheme;
    try {
        scheme = parse_quant_scheme(text);
    } catch (const Error&) {
        return;
    }
    const std::string name = scheme.name();
    QuantScheme again;
    try {
        again = parse_quant_scheme(name);
    } catch (const Error& e) {
        finding("the canonical name \"" + name + "\" does not parse: " + e.what());
    }
    if (again.name() != name || again.family != scheme.family || again.bits != scheme.bits ||
        again.granularity != scheme.granularity || again.block != scheme.block ||
        again.scale_format != scheme.scale_format || again.gguf_type != scheme.gguf_type) {
        finding("\"" + name + "\" parses to another scheme");
    }
    for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{1, 32}, {7, 256}, {896, 4864}}) {
        try {
            scheme.check_shape(rows, cols, "w");
        } catch (const Error&) {
            continue;
        }
        const double bits = scheme.bits_per_weight(rows, cols);
        if (!std::isfinite(bits) || bits <= 0 || scheme.storage_bytes(rows, cols) == 0 || scheme.scale_count(rows, cols) < 0) {
            finding("\"" + name + "\" gives a storage cost that is not positive and finite");
        }
    }
}

void check_battery(std::string_view text) {
    try {
        const Battery battery = parse_battery(text, "fuzz.battery");
        if (battery.items.empty() || battery.max_tokens <= 0) finding("a battery without items or tokens parsed");
        for (const auto& item : battery.items) {
            if (item.answers.empty()) finding("a battery item without answers parsed");
            (void)answer_matches(item.prompt, item.answers);
        }
    } catch (const Error&) {
    }
}

void check_layouts(std::string_view text) {
    try {
        for (const auto& layout : parse_kv_user_layouts(std::string(text))) {
            if (layout.users <= 0 || layout.tokens_per_user <= 0) finding("a KV layout with a size that is not positive parsed");
        }
    } catch (const Error&) {
    }
}

// A well-formed legacy checkpoint of vocabulary 4 (dim 4, one layer, seq_len 2), so the
// tokenizer reader gets to run on the fuzzed bytes.
std::string tiny_llama2c_checkpoint() {
    const int32_t header[7] = {4, 4, 1, 2, 1, 4, 2};
    const size_t floats = 4 * 4 + (2 * 4 + 2 * 16 + 2 * 4 * 2 + 3 * 16) + 4 + 2 * 2;
    std::string bytes(reinterpret_cast<const char*>(header), sizeof header);
    bytes.append(floats * sizeof(float), '\0');
    return bytes;
}

void check_llama2c(std::string_view bytes) {
    static const std::string checkpoint = tiny_llama2c_checkpoint();
    try {
        (void)parse_llama2c_header(bytes, "fuzz.bin");
    } catch (const Error&) {
    }
    Llama2cSources sources;
    sources.checkpoint = checkpoint;
    sources.tokenizer = bytes;
    try {
        const GgufWriter writer = convert_llama2c(sources);
        if (writer.to_bytes().empty()) finding("a llama2.c conversion wrote nothing");
    } catch (const Error&) {
    }
}

// A metrics page parses or is a RemoteError; what parses maps to the panels' quantities, and
// every histogram's buckets ascend.
void check_metrics_page(std::string_view text) {
    try {
        const auto families = remote::parse_prometheus_text(text);
        (void)remote::read_server_metrics(families);
        for (const remote::MetricFamily& f : families) {
            if (f.type != remote::MetricType::Histogram) continue;
            const remote::Histogram h = remote::histogram_of(f);
            for (size_t i = 1; i < h.buckets.size(); ++i) {
                if (!(h.buckets[i - 1].first < h.buckets[i].first)) finding("histogram buckets out of order in " + f.name);
            }
            (void)h.quantile(0.5);
        }
    } catch (const RemoteError&) {
    }
}

// An event stream gives the same events however its bytes are split.
void check_event_stream(std::string_view text) {
    const auto same = [](const remote::ServerSentEvent& a, const remote::ServerSentEvent& b) {
        return a.event == b.event && a.data == b.data && a.id == b.id;
    };
    try {
        remote::SseParser whole;
        const auto expected = whole.feed(text);
        remote::SseParser pieces;
        std::vector<remote::ServerSentEvent> got;
        for (size_t at = 0, step = 1; at < text.size(); at += step, step = step % 7 + 1) {
            for (auto& e : pieces.feed(text.substr(at, step))) got.push_back(std::move(e));
        }
        if (got.size() != expected.size() || !std::equal(got.begin(), got.end(), expected.begin(), same)) {
            finding("an event stream split in pieces gives other events");
        }
        if (pieces.pending_bytes() != whole.pending_bytes()) finding("an event stream split in pieces holds other bytes");
    } catch (const RemoteError&) {
    }
}

}  // namespace
}  // namespace inferscope

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    // 0xF0 and above select the llama2.c readers, 0xE0 and above the remote parsers; below, the
    // first byte modulo 3 picks a grammar,
    // which the committed corpus relies on.
    if (data[0] >= 0xF0) {
        inferscope::check_llama2c(text);
        return 0;
    }
    if (data[0] >= 0xE0) {  // 0xE0..0xE7 a metrics page, 0xE8..0xEF an event stream
        if (data[0] < 0xE8) {
            inferscope::check_metrics_page(text);
        } else {
            inferscope::check_event_stream(text);
        }
        return 0;
    }
    switch (data[0] % 3) {
        case 0: inferscope::check_scheme(text); break;
        case 1: inferscope::check_battery(text); break;
        default: inferscope::check_layouts(text); break;
    }
    return 0;
}
