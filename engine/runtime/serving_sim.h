#pragma once
// Simulated serving: a step-cost table measured once on the loaded model, a StepExecutor that
// charges those costs instead of running the engine (so a trace of thousands of steps replays
// in milliseconds), and a seeded request-trace generator.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"

namespace inferscope {

class InferenceSession;

// Cost of one step = decode cost(B decoding sequences at context C), interpolated in B and
// C between measured points, + prompt tokens x measured prefill cost per token.
class StepCostModel {
public:
    struct Point {
        int batch = 0;
        int context = 0;
        double seconds = 0;  // one decode step
    };
    StepCostModel(std::vector<Point> decode_points, double prefill_seconds_per_token);

    // Measures on `session` (which needs room for max(batch_sizes) sequences of
    // max(contexts) + 1 tokens): decode steps at every (batch, context) pair, and prefill.
    static StepCostModel measure(InferenceSession& session, std::span<const int> batch_sizes, std::span<const int> contexts,
                                 int repetitions, const std::function<void(const std::string&)>& on_progress = {});

    double decode_seconds(int batch, int context) const;
    double step_seconds(int decode_tokens, int prefill_tokens, int context) const;
    double prefill_seconds_per_token() const { return prefill_per_token_; }
    const std::vector<Point>& points() const { return points_; }

private:
    double decode_at_context_row(size_t row_begin, size_t row_end, int batch) const;

    std::vector<Point> points_;  // sorted by context, then batch
    double prefill_per_token_;
};

std::unique_ptr<StepExecutor> make_simulated_executor(const StepCostModel& model);

enum class ArrivalPattern { AllAtOnce, Poisson };

struct TraceOptions {
    int requests = 64;
    double median_output_tokens = 18;
    int max_output_tokens = 231;
    int prompt_tokens = 16;
    ArrivalPattern arrival = ArrivalPattern::AllAtOnce;
    double arrivals_per_s = 4.0;  // Poisson rate
    int vocab_size = 256;         // prompt tokens are drawn from [0, vocab_size)
    uint64_t seed = 1;
};

// Output lengths are log-normal with the given median, scaled so the longest is exactly the
// maximum; arrivals are all at time 0 or a Poisson process.
std::vector<ServingRequest> generate_trace(const TraceOptions& options);

}  // namespace inferscope
