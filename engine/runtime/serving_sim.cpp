#include "engine/runtime/serving_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {

StepCostModel::StepCostModel(std::vector<Point> points) : points_(std::move(points)) {
    if (points_.empty()) throw InvalidArgument("a step-cost model needs at least one measured point");
    std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) {
        return a.context != b.context ? a.context < b.context : a.tokens < b.tokens;
    });
    for (size_t i = 0; i < points_.size(); ++i) {
        if (points_[i].tokens <= 0) throw InvalidArgument("a step-cost point needs at least one token");
        if (i > 0 && points_[i].tokens == points_[i - 1].tokens && points_[i].context == points_[i - 1].context) {
            throw InvalidArgument("two step-cost points for " + std::to_string(points_[i].tokens) + " tokens at context " +
                                  std::to_string(points_[i].context));
        }
    }
    for (size_t i = 0; i < points_.size();) {
        size_t j = i;
        while (j < points_.size() && points_[j].context == points_[i].context) ++j;
        context_rows_.emplace_back(i, j);
        i = j;
    }
}

// Linear in the token count between the two measured counts around it (extrapolated from
// the last two beyond the largest).
double StepCostModel::at_context_row(size_t begin, size_t end, int tokens) const {
    if (end - begin == 1) return points_[begin].seconds * tokens / std::max(1, points_[begin].tokens);
    size_t hi = begin + 1;
    while (hi + 1 < end && points_[hi].tokens < tokens) ++hi;
    const Point& a = points_[hi - 1];
    const Point& b = points_[hi];
    const double t = static_cast<double>(tokens - a.tokens) / static_cast<double>(b.tokens - a.tokens);
    return std::max(0.0, a.seconds + t * (b.seconds - a.seconds));
}

double StepCostModel::seconds(int tokens, int context) const {
    if (tokens <= 0) return 0.0;
    // Interpolate between the two rows of equal context around `context`.
    const auto& rows = context_rows_;
    size_t hi = 0;
    while (hi + 1 < rows.size() && points_[rows[hi].first].context < context) ++hi;
    const double cost_hi = at_context_row(rows[hi].first, rows[hi].second, tokens);
    if (hi == 0) return cost_hi;
    const int c_lo = points_[rows[hi - 1].first].context;
    const int c_hi = points_[rows[hi].first].context;
    const double cost_lo = at_context_row(rows[hi - 1].first, rows[hi - 1].second, tokens);
    const double t = std::clamp(static_cast<double>(context - c_lo) / static_cast<double>(c_hi - c_lo), 0.0, 2.0);
    return std::max(0.0, cost_lo + t * (cost_hi - cost_lo));
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double mean(const std::vector<double>& values) {
    double sum = 0;
    for (double v : values) sum += v;
    return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

// `sequences` sequences filled to `context` tokens, then `repetitions` timed steps that
// append `tokens_each` tokens to every one of them (each time from the same context), after an
// untimed one where the backend has a warm-up.
double measure_step(InferenceSession& session, int sequences, int tokens_each, int context, int repetitions,
                    std::mt19937& rng) {
    std::uniform_int_distribution<TokenId> token(0, session.model().config().n_vocab - 1);
    std::vector<SeqId> seqs;
    Batch b;
    for (int s = 0; s < sequences; ++s) {
        seqs.push_back(session.new_sequence());
        b.clear();
        for (int i = 0; i < context; ++i) b.push_back({token(rng), seqs.back(), i, i + 1 == context});
        if (!b.empty()) session.decode(b);
    }
    std::vector<double> times;
    // A backend with a warm-up (a device compiling its kernels) pays it at a step shape's first run.
    const int untimed = session.needs_warm_up() ? 1 : 0;
    for (int r = -untimed; r < repetitions; ++r) {
        b.clear();
        for (SeqId s : seqs) {
            for (int i = 0; i < tokens_each; ++i) b.push_back({token(rng), s, context + i, i + 1 == tokens_each});
        }
        const auto start = Clock::now();
        session.decode(b);
        if (r >= 0) times.push_back(seconds_since(start));
        for (SeqId s : seqs) session.truncate_sequence(s, context);  // every repetition at the same context
    }
    for (SeqId s : seqs) session.free_sequence(s);
    return mean(times);
}

}  // namespace

StepCostModel StepCostModel::measure(InferenceSession& session, std::span<const int> decode_batches,
                                     std::span<const int> chunk_tokens, std::span<const int> contexts, int repetitions,
                                     const Progress& progress) {
    std::mt19937 rng(77);
    std::vector<Point> points;
    const int reps = std::max(1, repetitions);
    const auto total = static_cast<int64_t>(contexts.size() * (decode_batches.size() + chunk_tokens.size()));
    const auto priced = [&](const std::string& what) {
        progress.report("pricing steps", static_cast<int64_t>(points.size()), total, what);
        return !progress.cancelled();
    };
    for (int context : contexts) {
        const std::string at = " at context " + std::to_string(context);
        for (int batch : decode_batches) {
            points.push_back({batch, context, measure_step(session, batch, 1, context, reps, rng)});
            if (!priced(std::to_string(batch) + " decodes" + at)) return StepCostModel(std::move(points));
        }
        for (int chunk : chunk_tokens) {
            points.push_back({chunk, context, measure_step(session, 1, chunk, context, reps, rng)});
            if (!priced("a " + std::to_string(chunk) + "-token chunk" + at)) return StepCostModel(std::move(points));
        }
    }
    return StepCostModel(std::move(points));
}

namespace {

class SimulatedExecutor final : public StepExecutor {
public:
    explicit SimulatedExecutor(const StepCostModel& model) : model_(model) {}
    SeqId open_sequence() override { return next_seq_++; }
    void close_sequence(SeqId) override {}
    double run(std::span<const SlotWork> work, StepOutput& out) override {
        int decode = 0, prefill = 0, context = 0, contexts = 0;
        for (const SlotWork& w : work) {
            if (w.tokens.size() == 1 && w.first_position > 0 && w.wants_token) {
                ++decode;
            } else {
                prefill += static_cast<int>(w.tokens.size());
            }
            context += w.first_position + static_cast<int>(w.tokens.size());
            ++contexts;
            if (w.wants_token) out.tokens.push_back(0);
        }
        return model_.step_seconds(decode, prefill, contexts > 0 ? context / contexts : 0);
    }

private:
    const StepCostModel& model_;
    SeqId next_seq_ = 0;
};

}  // namespace

std::unique_ptr<StepExecutor> make_simulated_executor(const StepCostModel& model) {
    return std::make_unique<SimulatedExecutor>(model);
}

std::vector<ServingRequest> generate_trace(const TraceOptions& o) {
    if (o.requests < 1 || o.median_output_tokens < 1 || o.max_output_tokens < o.median_output_tokens || o.prompt_tokens < 1 ||
        o.vocab_size < 1) {
        throw InvalidArgument("trace: requests, prompt and output lengths must be positive and max >= median");
    }
    if (o.arrival == ArrivalPattern::Poisson && !(o.arrivals_per_s > 0 && std::isfinite(o.arrivals_per_s))) {
        throw InvalidArgument("trace: a Poisson arrival rate must be a positive, finite number of requests per second");
    }
    std::mt19937_64 rng(o.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> z(static_cast<size_t>(o.requests));
    for (double& v : z) v = normal(rng);
    const double z_max = *std::max_element(z.begin(), z.end());
    // exp(mu + sigma z) with mu = ln(median) and sigma chosen so the largest draw is the maximum.
    const double sigma = z_max > 0 ? std::log(o.max_output_tokens / o.median_output_tokens) / z_max : 0.0;
    std::uniform_int_distribution<TokenId> token(0, o.vocab_size - 1);
    std::exponential_distribution<double> gap(o.arrival == ArrivalPattern::Poisson ? o.arrivals_per_s : 1.0);
    std::vector<ServingRequest> trace;
    double t = 0;
    for (int i = 0; i < o.requests; ++i) {
        ServingRequest r;
        r.id = i;
        const double length = o.median_output_tokens * std::exp(sigma * z[static_cast<size_t>(i)]);
        r.max_new_tokens = std::clamp(static_cast<int>(std::lround(length)), 1, o.max_output_tokens);
        for (int p = 0; p < o.prompt_tokens; ++p) r.prompt.push_back(token(rng));
        if (o.arrival == ArrivalPattern::Poisson && i > 0) t += gap(rng);
        r.arrival_s = o.arrival == ArrivalPattern::Poisson ? t : 0.0;
        trace.push_back(std::move(r));
    }
    return trace;
}

}  // namespace inferscope
