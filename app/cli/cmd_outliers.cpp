// `outliers`: per-dimension activation outliers of one tensor kind in every layer, their
// persistence across layers, log2 histograms of the per-dimension maxima, and what INT8
// scales make of one chosen layer.
#include <algorithm>
#include <cstdio>
#include <string>

#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/probes/outlier_analysis.h"

namespace inferscope::cli {
namespace {

struct OutliersOptions {
    ModelOptions model;
    std::string prompt;
    int layer = -1;  // -1: the middle layer
    int top_k = 4;
    std::string tensor = "resid";
};

constexpr Int8Scheme kSchemes[] = {Int8Scheme::PerTensor, Int8Scheme::PerTensorExcludingTop, Int8Scheme::PerToken,
                                   Int8Scheme::PerChannel};

// Rows of the INT8 table: the top-k dimensions, then the median and the smallest dimension
// (by max |h|) as what a typical dimension looks like.
struct Int8TableRow {
    int dim = 0;
    std::string role;
};

std::vector<Int8TableRow> int8_table_rows(const Int8Analysis& a) {
    std::vector<Int8TableRow> rows;
    for (int dim : a.excluded_dims) rows.push_back({dim, "top"});
    std::vector<int> by_max(a.dim_max_abs.size());
    for (size_t d = 0; d < by_max.size(); ++d) by_max[d] = static_cast<int>(d);
    std::stable_sort(by_max.begin(), by_max.end(),
                     [&](int x, int y) { return a.dim_max_abs[static_cast<size_t>(x)] < a.dim_max_abs[static_cast<size_t>(y)]; });
    rows.push_back({by_max[by_max.size() / 2], "median"});
    rows.push_back({by_max.front(), "smallest"});
    return rows;
}

std::string layer_ranges(const std::vector<int>& layers) {
    std::string text;
    for (size_t i = 0; i < layers.size();) {
        size_t j = i;
        while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1) ++j;
        if (!text.empty()) text += ',';
        text += std::to_string(layers[i]);
        if (j > i) {
            text += '-';
            text += std::to_string(layers[j]);
        }
        i = j + 1;
    }
    return text;
}

std::string bin_label(const Log2Bin& bin) {
    char label[48];
    std::snprintf(label, sizeof label, "[%g,%g)", bin.lower, bin.upper);
    return label;
}

nlohmann::json layers_json(const OutlierReport& r) {
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerOutlierSummary& l : r.layers) {
        nlohmann::json top = nlohmann::json::array();
        for (const DimensionValue& t : l.top) top.push_back({{"dim", t.dim}, {"max_abs", t.value}});
        nlohmann::json histogram = nlohmann::json::array();
        for (const Log2Bin& b : l.histogram) histogram.push_back({{"lower", b.lower}, {"upper", b.upper}, {"count", b.count}});
        layers.push_back({{"layer", l.layer},
                          {"n_tokens", l.n_tokens},
                          {"mean_dim_max_abs", l.mean_dim_max_abs},
                          {"median_dim_max_abs", l.median_dim_max_abs},
                          {"top", top},
                          {"histogram", histogram}});
    }
    return layers;
}

nlohmann::json int8_json(const OutlierReport& r) {
    const Int8Analysis& a = r.int8;
    nlohmann::json schemes = nlohmann::json::array();
    for (Int8Scheme s : kSchemes) {
        const Int8SchemeResult& res = a.scheme(s);
        schemes.push_back({{"scheme", int8_scheme_key(s)},
                           {"description", int8_scheme_name(s)},
                           {"relative_error", res.relative_error},
                           {"max_abs_error", res.max_abs_error},
                           {"median_levels_used", res.median_levels_used}});
    }
    nlohmann::json table = nlohmann::json::array();
    for (const Int8TableRow& row : int8_table_rows(a)) {
        nlohmann::json levels;
        for (Int8Scheme s : kSchemes) {
            const bool kept_in_float = s == Int8Scheme::PerTensorExcludingTop && row.role == "top";
            const int used = a.scheme(s).levels_used[static_cast<size_t>(row.dim)];
            levels[std::string(int8_scheme_key(s))] = kept_in_float ? nlohmann::json(nullptr) : nlohmann::json(used);
        }
        table.push_back({{"dim", row.dim}, {"role", row.role}, {"max_abs", a.dim_max_abs[static_cast<size_t>(row.dim)]}, {"levels_used", levels}});
    }
    return {{"layer", r.int8_layer},
            {"n_tokens", a.n_tokens},
            {"n_dims", a.n_dims},
            {"tensor_max_abs", a.tensor_max_abs},
            {"tensor_scale", a.tensor_scale},
            {"excluded_dims", a.excluded_dims},
            {"reduced_scale", a.reduced_scale},
            {"scale_shrink_ratio", a.scale_shrink_ratio},
            {"schemes", schemes},
            {"table", table}};
}

void print_layers(const OutlierReport& r) {
    std::printf("%-6s %13s %12s  top %d dimensions (dim:max|h|)\n", "layer", "median max|h|", "mean max|h|", r.top_k);
    for (const LayerOutlierSummary& l : r.layers) {
        std::printf("%-6d %13.4f %12.4f ", l.layer, l.median_dim_max_abs, l.mean_dim_max_abs);
        for (const DimensionValue& t : l.top) std::printf(" %d:%.4g", t.dim, t.value);
        std::printf("\n");
    }
    std::printf("\npersistence of the top dimensions (layers where each is in the top %d):\n", r.top_k);
    for (const DimensionPersistence& p : r.persistence) {
        std::printf("  dim %-6d %zu of %zu layers: %s\n", p.dim, p.layers.size(), r.layers.size(), layer_ranges(p.layers).c_str());
    }
}

void print_histograms(const OutlierReport& r) {
    // Every layer's bins start at [0,1) and double, so the layer with the most bins labels all.
    const auto widest = std::max_element(r.layers.begin(), r.layers.end(), [](const auto& x, const auto& y) {
        return x.histogram.size() < y.histogram.size();
    });
    const std::vector<Log2Bin>& bins = widest->histogram;
    std::printf("\nlog2 histogram of the %d per-dimension maxima (dimensions per bin):\n%-6s", r.n_dims, "layer");
    for (const Log2Bin& b : bins) std::printf(" %11s", bin_label(b).c_str());
    std::printf("\n");
    for (const LayerOutlierSummary& l : r.layers) {
        std::printf("%-6d", l.layer);
        for (size_t i = 0; i < bins.size(); ++i) std::printf(" %11lld", static_cast<long long>(i < l.histogram.size() ? l.histogram[i].count : 0));
        std::printf("\n");
    }
}

void print_int8(const OutlierReport& r) {
    const Int8Analysis& a = r.int8;
    std::printf("\nINT8 analysis of blk.%d.%s (%lld tokens x %lld dimensions; codes -127..127, 255 levels):\n", r.int8_layer,
                r.tensor.c_str(), static_cast<long long>(a.n_tokens), static_cast<long long>(a.n_dims));
    std::printf("  tensor-wide scale %.6g (max |h| %.6g / 127)\n", a.tensor_scale, a.tensor_max_abs);
    std::printf("  without the top %zu dimensions: scale %.6g, %.4gx smaller\n", a.excluded_dims.size(), a.reduced_scale,
                a.scale_shrink_ratio);
    std::printf("\n  %-34s %14s %14s %14s\n", "scale", "rel. error", "max |error|", "median levels");
    for (Int8Scheme s : kSchemes) {
        const Int8SchemeResult& res = a.scheme(s);
        std::printf("  %-34s %14.6g %14.6g %14g\n", std::string(int8_scheme_name(s)).c_str(), res.relative_error,
                    res.max_abs_error, res.median_levels_used);
    }
    std::printf("\n  %-8s %-9s %12s %11s %11s %11s %11s\n", "dim", "role", "max |h|", "tensor", "tensor-topk", "per-token",
                "per-channel");
    for (const Int8TableRow& row : int8_table_rows(a)) {
        const auto d = static_cast<size_t>(row.dim);
        std::printf("  %-8d %-9s %12.6g", row.dim, row.role.c_str(), a.dim_max_abs[d]);
        for (Int8Scheme s : kSchemes) {
            const int levels = a.scheme(s).levels_used[d];
            if (s == Int8Scheme::PerTensorExcludingTop && row.role == "top") {
                std::printf(" %11s", "float");
            } else {
                std::printf(" %11d", levels);
            }
        }
        std::printf("\n");
    }
}

void run_outliers(const OutliersOptions& o) {
    if (o.prompt.empty()) throw InvalidArgument("the prompt is empty (give some text with -p)");
    require_block_tensor_kind(o.tensor);
    const auto model = load_model(o.model);
    const std::vector<TokenId> prompt = tokenize_prompt(*model, o.prompt);
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model));
    OutlierAnalysisOptions options;
    options.tensor = o.tensor;
    options.top_k = o.top_k;
    options.int8_layer = o.layer;
    const OutlierReport report = analyze_outliers(session, prompt, options);
    if (o.model.json) {
        nlohmann::json persistence = nlohmann::json::array();
        for (const DimensionPersistence& p : report.persistence) persistence.push_back({{"dim", p.dim}, {"layers", p.layers}});
        print_json({{"tensor", report.tensor},
                    {"n_tokens", report.n_tokens},
                    {"n_dims", report.n_dims},
                    {"top_k", report.top_k},
                    {"layers", layers_json(report)},
                    {"persistence", persistence},
                    {"int8", int8_json(report)}});
        return;
    }
    std::printf("%s: blk.N.%s over %lld prompt tokens, %d dimensions per layer\n\n", model->config().name.c_str(),
                report.tensor.c_str(), static_cast<long long>(report.n_tokens), report.n_dims);
    print_layers(report);
    print_histograms(report);
    print_int8(report);
}

}  // namespace

void add_outliers_command(CLI::App& app) {
    auto o = std::make_shared<OutliersOptions>();
    CLI::App* cmd = app.add_subcommand("outliers", "per-dimension activation outliers per layer and their INT8 cost");
    add_model_options(*cmd, o->model, true);
    add_prompt_options(*cmd, o->prompt, "prompt text", true);
    cmd->add_option("--layer", o->layer, "layer for the INT8 analysis (default: the middle layer)");
    cmd->add_option("--top", o->top_k, "outlier dimensions per layer (also kept in float in the INT8 analysis)")
        ->capture_default_str();
    cmd->add_option("--tensor", o->tensor, "per-layer tensor: resid, ffn_in, attn_in, ffn_hidden, attn_out, ffn_out, ...")
        ->capture_default_str();
    cmd->callback([o] { run_outliers(*o); });
}

}  // namespace inferscope::cli
