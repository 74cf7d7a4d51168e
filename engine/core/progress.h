#pragma once
// How a long engine call (perplexity, quantization, a bench, a sweep) tells its caller how far
// it has come and learns that the caller wants it to stop. Stopping is a return path: the call
// checks cancelled() between units of work and returns what it has, marked as cancelled;
// nothing is thrown through engine code.
#include <cstdint>
#include <functional>
#include <string_view>

namespace inferscope {

struct ProgressUpdate {
    double fraction = 0;     // of the whole call, in [0, 1]
    std::string_view stage;  // what the call is doing: "scoring chunks", "quantizing", "tg128"
    std::string_view item;   // what just finished within the stage, when it has a name ("blk.3.attn_q")
    int64_t done = 0;        // units of the stage finished
    int64_t total = 0;       // units the stage has
};

class Progress {
public:
    using Reporter = std::function<void(const ProgressUpdate&)>;
    using CancelCheck = std::function<bool()>;

    Progress() = default;  // reports nowhere and is never cancelled
    explicit Progress(Reporter reporter, CancelCheck cancelled = {});

    // `done` of the `total` units of `stage` are finished (the whole call's fraction follows
    // from them and from the share this progress stands for).
    void report(std::string_view stage, int64_t done, int64_t total, std::string_view item = {}) const;
    bool cancelled() const { return cancelled_ && cancelled_(); }

    // The same progress for a part of the call spanning [begin, end] of its fraction.
    Progress share(double begin, double end) const;
    // Part `index` of `count` equal parts.
    Progress part(int64_t index, int64_t count) const;

private:
    Reporter reporter_;
    CancelCheck cancelled_;
    double begin_ = 0;
    double end_ = 1;
};

}  // namespace inferscope
