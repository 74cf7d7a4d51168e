#pragma once
// A mapped model file that another program truncates (or rewrites in place) while we run:
// reading a mapped page past the file's new end raises SIGBUS, which kills the process. A
// registered range gets a SIGBUS handler that maps a zero page over the faulting page and
// marks the range as changed, so the reading thread (any thread of the pool) finishes its
// step on zeros instead of dying; the engine then refuses that step's result and the model
// (see MappedRangeGuard::changed). Faults outside every registered range go to the handler
// that was there before (by default: the process ends with SIGBUS, as it would have).
#include <cstddef>

namespace inferscope {

class MappedRangeGuard {
public:
    // Registers [begin, begin + bytes) (installing the handler on first use). Throws Error
    // when every registration slot is taken.
    MappedRangeGuard(const void* begin, size_t bytes);
    ~MappedRangeGuard();
    MappedRangeGuard(const MappedRangeGuard&) = delete;
    MappedRangeGuard& operator=(const MappedRangeGuard&) = delete;

    // True once a read in the range faulted (the file shrank under the mapping).
    bool faulted() const;

    // How many ranges can be registered at once (open model files).
    static constexpr int kMaxRanges = 64;

private:
    int slot_;
};

}  // namespace inferscope
