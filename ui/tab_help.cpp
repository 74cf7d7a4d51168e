#include "ui/tab_help.h"

#include <QCoreApplication>

namespace inferscope::ui {
namespace {

QString tr(const char* text) { return QCoreApplication::translate("TabHelp", text); }

}  // namespace

QList<TabHelp> all_tab_help() {
    return {
        {QStringLiteral("step-latency"), tr("Step latency"),
         tr("Every forward step of the last generation as a point: the prompt's prefill step, then one decode step "
            "per generated token. The title gives the time to first token and the decode rate. Decode steps cost "
            "about the same each: each reads every weight once for one token."),
         tr("Generate, then tick \"Also run without KV cache\" to add the run that recomputes the whole context at "
            "every step, and watch its steps grow with the context.")},
        {QStringLiteral("kv-memory"), tr("KV-cache memory"),
         tr("Bytes of KV cache in use and reserved (whole 16-token blocks) against the tokens in the cache, beside the "
            "formula 2 × layers × KV heads × head dim × bytes per element, and what full multi-head or multi-query "
            "attention would cost for the same model. The cache grows linearly with every token kept."),
         tr("Generate a long answer and read the bytes per token in the title; compare the MHA what-if line.")},
        {QStringLiteral("memory-planner"), tr("Memory planner"),
         tr("How many tokens of context fit next to the weights on a GPU of a given size, for a model, a weight "
            "precision and a KV type. It opens on a worked example: a 13B model in int4 on 8 GiB keeps 337 "
            "tokens, so the model fits but the conversation does not."),
         tr("Switch the weights to int8, then the GPU to 24 GiB, and watch the resident tokens.")},
        {QStringLiteral("speculative-speedup"), tr("Speculative decoding"),
         tr("The speed-up a draft model gives against γ (tokens drafted per verify) for an acceptance rate α and a "
            "draft cost ratio c, and, measured, what a real draft achieves on the loaded model: acceptance, tokens "
            "per verify, cost ratio and speed-up, with output identical to plain greedy decoding."),
         tr("Press Measure to run the loaded model against its quantized draft and see where the measured point "
            "falls on the curves.")},
        {QStringLiteral("batching"), tr("Batching"),
         tr("Why servers batch: aggregate tokens/s climbs with the batch size while each request's time per step "
            "barely moves, until the knee where a step becomes compute-bound. A replay of a 64-request trace sets "
            "static against continuous batching."),
         tr("Drag the batch-size slider, then press Run for real to serve the trace on the loaded model beside the "
            "simulation.")},
        {QStringLiteral("prefill-vs-decode"), tr("Prefill vs decode"),
         tr("Why a prompt token costs a fraction of a generated one: prefill processes the whole prompt in one "
            "pass of matrix-matrix products, decode reads every weight again for each new token."),
         tr("Press Measure and compare the prefill ms per token with the decode ms per step.")},
        {QStringLiteral("activation-outliers"), tr("Activation outliers"),
         tr("A few residual-stream dimensions carry values far larger than the rest; a tensor-wide INT8 scale "
            "sized for them leaves the other dimensions only a few of the 255 levels. The heat strip shows whether "
            "the same dimensions stay the outliers layer after layer."),
         tr("Type a prompt and move the layer slider; compare the INT8 error with and without the top dimensions "
            "set aside.")},
        {QStringLiteral("soft-labels"), tr("Soft labels"),
         tr("The model's next-token distribution for your prompt as top-k bars: what a teacher says beyond its hard "
            "label, how temperature reveals it, and how much survives in a quantized student (KL at the chosen "
            "temperature)."),
         tr("Raise the temperature to 2, then pick an int4 student and compare its bars with the teacher's.")},
        {QStringLiteral("quantization"), tr("Quantization"),
         tr("What weight quantization saves and costs: per-matrix relative error for a bit width, granularity or "
            "GGUF format (grouped by layer, the worst matrix highlighted), bits per weight and size, and the quality against the "
            "unquantized model (perplexity, KL, top-1 agreement). Formats whose block does not divide the model's "
            "rows are disabled, with the reason in their tooltip."),
         tr("Drag the bit width from 8 down to 2, then press Measure quality and Generate with these weights.")},
        {QStringLiteral("server"), tr("Server"),
         tr("A real deployment over HTTP (vLLM, llama-server, SGLang, TGI, or inferscope-cli serve): the model it serves "
            "and its context, its /metrics as KV-cache usage, running and waiting requests, token counts and latency "
            "quantiles (or \"not exported by this server\"), and a concurrency sweep: aggregate tokens/s against the "
            "inter-token latency each stream sees, the batching trade-off measured on the server."),
         tr("Start inferscope-cli serve in a terminal, connect with File › Connect to Server…, then run the sweep at "
            "1,2,4,8,16 streams and watch the running requests in the metrics.")},
    };
}

std::optional<TabHelp> tab_help(const QString& key) {
    for (const TabHelp& help : all_tab_help()) {
        if (help.key == key) return help;
    }
    return std::nullopt;
}

QList<TabHelp> guided_tour_steps() {
    QList<TabHelp> steps;
    for (const char* key : {"prefill-vs-decode", "kv-memory", "batching", "quantization", "activation-outliers", "speculative-speedup"}) {
        if (const auto help = tab_help(QString::fromLatin1(key))) steps.append(*help);
    }
    return steps;
}

}  // namespace inferscope::ui
