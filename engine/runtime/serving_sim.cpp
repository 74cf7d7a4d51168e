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

StepCostModel::StepCostModel(std::vector<Point> decode_points, double prefill_seconds_per_token)
    : points_(std::move(decode_points)), prefill_per_token_(prefill_seconds_per_token) {
    if (points_.empty()) throw InvalidArgument("a step-cost model needs at least one measured point");
    std::sort(points_.begin(), points_.end(), [](const Point& a, const Point& b) {
        return a.context != b.context ? a.context < b.context : a.batch < b.batch;
    });
}

// Linear in the batch size between the two measured sizes around it (extrapolated from the
// last two beyond the largest).
double StepCostModel::decode_at_context_row(size_t begin, size_t end, int batch) const {
    if (end - begin == 1) return points_[begin].seconds * batch / std::max(1, points_[begin].batch);
    size_t hi = begin + 1;
    while (hi + 1 < end && points_[hi].batch < batch) ++hi;
    const Point& a = points_[hi - 1];
    const Point& b = points_[hi];
    const double t = static_cast<double>(batch - a.batch) / static_cast<double>(b.batch - a.batch);
    return std::max(0.0, a.seconds + t * (b.seconds - a.seconds));
}

double StepCostModel::decode_seconds(int batch, int context) const {
    if (batch <= 0) return 0.0;
    // Rows of equal context; interpolate between the two rows around `context`.
    std::vector<std::pair<size_t, size_t>> rows;
    for (size_t i = 0; i < points_.size();) {
        size_t j = i;
        while (j < points_.size() && points_[j].context == points_[i].context) ++j;
        rows.emplace_back(i, j);
        i = j;
    }
    size_t hi = 0;
    while (hi + 1 < rows.size() && points_[rows[hi].first].context < context) ++hi;
    const double cost_hi = decode_at_context_row(rows[hi].first, rows[hi].second, batch);
    if (hi == 0) return cost_hi;
    const int c_lo = points_[rows[hi - 1].first].context;
    const int c_hi = points_[rows[hi].first].context;
    const double cost_lo = decode_at_context_row(rows[hi - 1].first, rows[hi - 1].second, batch);
    const double t = std::clamp(static_cast<double>(context - c_lo) / static_cast<double>(c_hi - c_lo), 0.0, 2.0);
    return std::max(0.0, cost_lo + t * (cost_hi - cost_lo));
}

double StepCostModel::step_seconds(int decode_tokens, int prefill_tokens, int context) const {
    return decode_seconds(decode_tokens, context) + prefill_tokens * prefill_per_token_;
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// B sequences filled to `context` tokens, then `repetitions` timed decode steps of all B.
double measure_decode(InferenceSession& session, int batch, int context, int repetitions, std::mt19937& rng) {
    std::uniform_int_distribution<TokenId> token(0, session.model().config().n_vocab - 1);
    std::vector<SeqId> seqs;
    Batch b;
    for (int s = 0; s < batch; ++s) {
        seqs.push_back(session.new_sequence());
        b.clear();
        for (int i = 0; i < context; ++i) b.push_back({token(rng), seqs.back(), i, i + 1 == context});
        session.decode(b);
    }
    double best = 1e30;
    for (int r = 0; r < repetitions; ++r) {
        b.clear();
        for (SeqId s : seqs) b.push_back({token(rng), s, session.sequence_length(s), true});
        const auto start = Clock::now();
        session.decode(b);
        best = std::min(best, seconds_since(start));
        for (SeqId s : seqs) session.truncate_sequence(s, context);  // every repetition at the same context
    }
    for (SeqId s : seqs) session.free_sequence(s);
    return best;
}

}  // namespace

StepCostModel StepCostModel::measure(InferenceSession& session, std::span<const int> batch_sizes, std::span<const int> contexts,
                                     int repetitions, const std::function<void(const std::string&)>& on_progress) {
    std::mt19937 rng(77);
    std::vector<Point> points;
    for (int context : contexts) {
        for (int batch : batch_sizes) {
            points.push_back({batch, context, measure_decode(session, batch, context, std::max(1, repetitions), rng)});
            if (on_progress) on_progress("cost B=" + std::to_string(batch) + " C=" + std::to_string(context));
        }
    }
    // Prefill: one prompt of 128 tokens (or the largest context), the best of the repetitions.
    const int prompt = std::max(16, std::min(128, *std::max_element(contexts.begin(), contexts.end())));
    std::uniform_int_distribution<TokenId> token(0, session.model().config().n_vocab - 1);
    double best = 1e30;
    for (int r = 0; r < std::max(1, repetitions); ++r) {
        const SeqId seq = session.new_sequence();
        Batch b;
        for (int i = 0; i < prompt; ++i) b.push_back({token(rng), seq, i, i + 1 == prompt});
        const auto start = Clock::now();
        session.decode(b);
        best = std::min(best, seconds_since(start));
        session.free_sequence(seq);
    }
    return StepCostModel(std::move(points), best / prompt);
}

namespace {

class SimulatedExecutor final : public StepExecutor {
public:
    explicit SimulatedExecutor(const StepCostModel& model) : model_(model) {}
    SeqId open_sequence() override { return next_seq_++; }
    void close_sequence(SeqId) override {}
    double run(std::span<const SlotWork> work, std::vector<TokenId>& tokens) override {
        int decode = 0, prefill = 0, context = 0, contexts = 0;
        tokens.clear();
        for (const SlotWork& w : work) {
            if (w.tokens.size() == 1 && w.first_position > 0 && w.wants_token) {
                ++decode;
            } else {
                prefill += static_cast<int>(w.tokens.size());
            }
            context += w.first_position + static_cast<int>(w.tokens.size());
            ++contexts;
            if (w.wants_token) tokens.push_back(0);
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
    std::mt19937_64 rng(o.seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> z(static_cast<size_t>(o.requests));
    for (double& v : z) v = normal(rng);
    const double z_max = *std::max_element(z.begin(), z.end());
    // exp(mu + sigma z) with mu = ln(median) and sigma chosen so the largest draw is the maximum.
    const double sigma = z_max > 0 ? std::log(o.max_output_tokens / o.median_output_tokens) / z_max : 0.0;
    std::uniform_int_distribution<TokenId> token(0, o.vocab_size - 1);
    std::exponential_distribution<double> gap(o.arrivals_per_s > 0 ? o.arrivals_per_s : 1.0);
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
