#include "engine/core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/core/error.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INFERSCOPE_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define INFERSCOPE_CPU_RELAX() __asm__ __volatile__("yield")
#else
#define INFERSCOPE_CPU_RELAX() std::this_thread::yield()
#endif

namespace inferscope {
namespace {

// Waiting has three stages. Pure spinning (a pause instruction per check) bridges the few
// microseconds between the loops of a forward pass. Then the waiter yields its core at each
// check: when more threads want to run than there are cores (a busy UI thread, another
// program), a spinning waiter would otherwise hold a core that the thread it waits for
// needs, stretching every loop to a scheduler time slice. After kYieldUntilSleep an idle
// worker sleeps on the condition variable.
constexpr int kPureSpinChecks = 2000;
constexpr auto kYieldUntilSleep = std::chrono::microseconds(2000);

inline void wait_step(int check) {
    if (check < kPureSpinChecks) {
        INFERSCOPE_CPU_RELAX();
    } else {
        std::this_thread::yield();
    }
}

// A piece is this fraction of what is left of its share: long runs while much is left (a row
// product's prefetches run on from one piece into the next), short ones near the end, so
// that two threads finish within a short piece of each other. A fixed fraction of the share
// would leave the last piece of a large matrix (the output projection) megabytes long, and
// the caller waiting on it.
constexpr int64_t kPieceOfWhatIsLeft = 4;
// Pieces are whole multiples of this many items, counted from the share's start, until the
// share's last piece: the row kernels take their rows 8 at a time, and a piece that splits
// a group runs its last rows through the narrower kernels.
constexpr int64_t kPieceAlign = 32;

std::pair<int64_t, int64_t> share_of(int64_t n_items, int n_shares, int index) {
    const int64_t base = n_items / n_shares;
    const int64_t extra = n_items % n_shares;
    const int64_t begin = index * base + std::min<int64_t>(index, extra);
    return {begin, begin + base + (index < extra ? 1 : 0)};
}

// Where the piece that starts at `first` (a piece boundary) of the share ending at
// share_end ends, at most at `limit` (the end of what a thread has claimed or taken).
// Boundaries depend only on the share, never on timing.
int64_t piece_end(int64_t first, int64_t limit, int64_t share_end) {
    const int64_t left = share_end - first;
    if (left <= 2 * kPieceAlign) return limit;
    const int64_t piece = (left / kPieceOfWhatIsLeft + kPieceAlign - 1) / kPieceAlign * kPieceAlign;
    return std::min(limit, first + std::max(piece, kPieceAlign));
}

uint64_t pack(int64_t first, int64_t end) { return static_cast<uint64_t>(first) << 32 | static_cast<uint64_t>(end); }
int64_t first_of(uint64_t left) { return static_cast<int64_t>(left >> 32); }
int64_t end_of(uint64_t left) { return static_cast<int64_t>(left & 0xffffffffu); }

}  // namespace

ThreadPool::ThreadPool(int n_threads)
    : n_threads_(checked_thread_count(n_threads)), shares_(static_cast<size_t>(n_threads_)) {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_.store(true);
    }
    wake_.notify_all();
    for (auto& worker : workers_) worker.join();
}

// The next piece from the front of this thread's own share.
bool ThreadPool::claim_piece(int index, int64_t& begin, int64_t& end) {
    Share& share = shares_[static_cast<size_t>(index)];
    uint64_t seen = share.left.load(std::memory_order_relaxed);
    for (;;) {
        const int64_t first = first_of(seen), last = end_of(seen);
        if (first >= last) return false;
        const int64_t next = split_ == Split::pieces ? piece_end(first, last, share.end) : last;
        if (share.left.compare_exchange_weak(seen, pack(next, last), std::memory_order_relaxed)) {
            begin = first;
            end = next;
            return true;
        }
    }
}

// The back of the share with the most left that nobody has started: the pieces after the
// last boundary that keeps at most half of those items with their owner (all of them when
// only one piece is left). False when every share has been started to its end.
bool ThreadPool::take_from_others(int thief, int64_t& begin, int64_t& end, int64_t& share_end) {
    for (;;) {
        int victim = -1;
        uint64_t victim_left = 0;
        int64_t most = 0;
        for (int i = 0; i < n_threads_; ++i) {
            if (i == thief) continue;
            const uint64_t left = shares_[static_cast<size_t>(i)].left.load(std::memory_order_relaxed);
            if (end_of(left) - first_of(left) > most) {
                most = end_of(left) - first_of(left);
                victim = i;
                victim_left = left;
            }
        }
        if (victim < 0) return false;
        Share& share = shares_[static_cast<size_t>(victim)];
        const int64_t first = first_of(victim_left), last = end_of(victim_left);
        int64_t keep_to = first;
        for (int64_t next = piece_end(first, last, share.end); next < last && next - first <= most / 2;
             next = piece_end(next, last, share.end)) {
            keep_to = next;
        }
        if (share.left.compare_exchange_strong(victim_left, pack(first, keep_to), std::memory_order_relaxed)) {
            begin = keep_to;
            end = last;
            share_end = share.end;
            return true;
        }
    }
}

void ThreadPool::run_share(int index) noexcept {
    try {
        int64_t begin = 0, end = 0, share_end = 0;
        while (claim_piece(index, begin, end)) (*job_)(index, begin, end);
        while (split_ == Split::pieces && take_from_others(index, begin, end, share_end)) {
            for (int64_t first = begin, next = 0; first < end; first = next) {
                next = piece_end(first, end, share_end);
                (*job_)(index, first, next);
            }
        }
    } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!first_error_) first_error_ = std::current_exception();
    }
}

void ThreadPool::parallel_for(int64_t n_items, const std::function<void(int64_t, int64_t)>& fn, Split split) {
    parallel_for_indexed(n_items, [&fn](int, int64_t begin, int64_t end) { fn(begin, end); }, split);
}

void ThreadPool::parallel_for_indexed(int64_t n_items, const std::function<void(int, int64_t, int64_t)>& fn,
                                      Split split) {
    if (n_items <= 0) return;
    if (n_threads_ == 1 || n_items == 1) {
        fn(0, 0, n_items);
        return;
    }
    if (n_items > static_cast<int64_t>(0xffffffffu)) {
        throw std::length_error("parallel_for over " + std::to_string(n_items) + " items: at most 2^32 - 1 are supported");
    }
    job_ = &fn;
    split_ = split;
    for (int i = 0; i < n_threads_; ++i) {
        const auto [first, end] = share_of(n_items, n_threads_, i);
        shares_[static_cast<size_t>(i)].end = end;
        shares_[static_cast<size_t>(i)].left.store(pack(first, end), std::memory_order_relaxed);
    }
    ++generation_;
    // Opening the job and the sleeper count are sequentially consistent, and a worker counts
    // itself as sleeping before it checks the state a last time: either it sees this job, or
    // this thread sees it sleeping and wakes it (taking the mutex, so that the notification
    // cannot fall between its check and its wait).
    state_.store(generation_ * 2 + 1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
        { std::lock_guard lock(mutex_); }
        wake_.notify_all();
    }
    run_share(0);
    // With shares every worker runs its own: wait until each has claimed it. (With pieces,
    // run_share has already taken whatever nobody had.)
    const auto unclaimed = [this](int index) {
        const uint64_t left = shares_[static_cast<size_t>(index)].left.load(std::memory_order_relaxed);
        return first_of(left) < end_of(left);
    };
    for (int i = 1; i < n_threads_; ++i) {
        for (int check = 0; unclaimed(i); ++check) wait_step(check);
    }
    // Every piece has been claimed. Closing the job and reading active_ pair with a worker's
    // joining (active_ first, then the state), all sequentially consistent: either the
    // worker sees the job closed and leaves without touching it, or this thread sees it
    // active and waits for it. A worker that has not joined by now is not waited for.
    state_.store(generation_ * 2, std::memory_order_seq_cst);
    for (int check = 0; active_.load(std::memory_order_seq_cst) != 0; ++check) wait_step(check);
    job_ = nullptr;
    if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
}

// Waits for a generation after seen_generation and moves seen_generation to it; returns
// false when the pool is stopping.
bool ThreadPool::wait_for_job(uint64_t& seen_generation) {
    const auto sleep_at = std::chrono::steady_clock::now() + kYieldUntilSleep;
    const auto generation_now = [this] { return state_.load(std::memory_order_seq_cst) / 2; };
    for (int check = 0;; ++check) {
        if (stopping_.load(std::memory_order_relaxed)) return false;
        if (state_.load(std::memory_order_acquire) / 2 != seen_generation) break;
        wait_step(check);
        if (check >= kPureSpinChecks && std::chrono::steady_clock::now() > sleep_at) {
            std::unique_lock lock(mutex_);
            sleeping_.fetch_add(1, std::memory_order_seq_cst);
            wake_.wait(lock, [&] { return stopping_.load() || generation_now() != seen_generation; });
            sleeping_.fetch_sub(1);
        }
    }
    seen_generation = generation_now();
    return true;
}

void ThreadPool::worker_loop(int worker_index) {
    uint64_t seen_generation = 0;
    while (wait_for_job(seen_generation)) {
        active_.fetch_add(1, std::memory_order_seq_cst);
        // Still open: the caller will wait for this worker. Closed, or a later generation: the
        // job is over (or being set up) and must not be touched.
        if (state_.load(std::memory_order_seq_cst) == seen_generation * 2 + 1) run_share(worker_index);
        active_.fetch_sub(1, std::memory_order_release);
    }
}

int ThreadPool::max_thread_count() {
    const unsigned logical = std::thread::hardware_concurrency();
    return kMaxThreadsPerLogicalCpu * static_cast<int>(logical == 0 ? 1 : logical);
}

int ThreadPool::checked_thread_count(int n_threads) {
    if (n_threads > max_thread_count()) {
        throw InvalidArgument(std::to_string(n_threads) + " threads: at most " + std::to_string(max_thread_count()) + " (" +
                              std::to_string(kMaxThreadsPerLogicalCpu) + " per logical CPU of this machine); more only wait for each other");
    }
    return n_threads < 1 ? 1 : n_threads;
}

int ThreadPool::default_thread_count() {
    // Count distinct (physical id, core id) pairs; hyper-threads share a core and do not
    // speed up memory-bound decode.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::set<std::pair<std::string, std::string>> cores;
    std::string line, physical_id;
    while (std::getline(cpuinfo, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
        if (line.rfind("physical id", 0) == 0) physical_id = value;
        if (line.rfind("core id", 0) == 0) cores.emplace(physical_id, value);
    }
    if (!cores.empty()) return static_cast<int>(cores.size());
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace inferscope
