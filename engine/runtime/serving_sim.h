#pragma once
// Simulated serving: a step-cost table measured once on the loaded model, a StepExecutor that
// charges those costs instead of running the engine (so a trace of thousands of steps replays
// in milliseconds), and a seeded request-trace generator.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/progress.h"
#include "engine/runtime/scheduler.h"

namespace inferscope {

class InferenceSession;

// Cost of one step as a function of the tokens it runs (decodes and prompt tokens alike: one
// matrix product per weight serves them all) and the context they attend over, interpolated
// between measured points: few tokens measured as that many sequences decoding together, many
// tokens as one sequence's prompt chunk. A step mixing a newcomer's prompt with decodes is
// charged as one step of all its tokens, which is what it costs the engine.
class StepCostModel {
public:
    struct Point {
        int tokens = 0;
        int context = 0;
        double seconds = 0;  // one step
    };
    explicit StepCostModel(std::vector<Point> points);

    // Measures on `session` (which needs room for max(decode_batches) sequences and for
    // max(contexts) + max(chunk_tokens) tokens): steps of B decoding sequences for each B in
    // decode_batches, and prompt chunks of each size in chunk_tokens, at every context; each
    // point is the mean of `repetitions` timed steps (a replay pays the slow steps too), after an
    // untimed one where the backend has a warm-up (InferenceSession::needs_warm_up).
    // Reported after each point (stage "pricing steps"); once cancelled, the model holds the
    // points priced so far.
    static StepCostModel measure(InferenceSession& session, std::span<const int> decode_batches,
                                 std::span<const int> chunk_tokens, std::span<const int> contexts, int repetitions,
                                 const Progress& progress = {});

    double seconds(int tokens, int context) const;
    double step_seconds(int decode_tokens, int prefill_tokens, int context) const {
        return seconds(decode_tokens + prefill_tokens, context);
    }
    const std::vector<Point>& points() const { return points_; }

private:
    double at_context_row(size_t row_begin, size_t row_end, int tokens) const;

    std::vector<Point> points_;  // sorted by context, then tokens
    std::vector<std::pair<size_t, size_t>> context_rows_;  // [begin, end) of points_ per context
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
