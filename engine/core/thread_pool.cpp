#include "engine/core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define INFERSCOPE_CPU_RELAX() _mm_pause()
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

std::pair<int64_t, int64_t> chunk_of(int64_t n_items, int n_chunks, int index) {
    const int64_t base = n_items / n_chunks;
    const int64_t extra = n_items % n_chunks;
    const int64_t begin = index * base + std::min<int64_t>(index, extra);
    return {begin, begin + base + (index < extra ? 1 : 0)};
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
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

void ThreadPool::run_chunk(int index) noexcept {
    try {
        const auto [begin, end] = chunk_of(job_items_, n_threads_, index);
        if (begin < end) (*job_)(index, begin, end);
    } catch (...) {
        std::lock_guard lock(error_mutex_);
        if (!first_error_) first_error_ = std::current_exception();
    }
}

void ThreadPool::parallel_for(int64_t n_items, const std::function<void(int64_t, int64_t)>& fn) {
    parallel_for_indexed(n_items, [&fn](int, int64_t begin, int64_t end) { fn(begin, end); });
}

void ThreadPool::parallel_for_indexed(int64_t n_items, const std::function<void(int, int64_t, int64_t)>& fn) {
    if (n_items <= 0) return;
    if (n_threads_ == 1 || n_items == 1) {
        fn(0, 0, n_items);
        return;
    }
    job_ = &fn;
    job_items_ = n_items;
    pending_.store(n_threads_ - 1, std::memory_order_relaxed);
    // Both this bump and the sleeper count are sequentially consistent, and a worker counts
    // itself as sleeping before it checks the generation a last time: either it sees this
    // job, or this thread sees it sleeping and wakes it (taking the mutex, so that the
    // notification cannot fall between its check and its wait).
    generation_.fetch_add(1, std::memory_order_seq_cst);
    if (sleeping_.load(std::memory_order_seq_cst) > 0) {
        { std::lock_guard lock(mutex_); }
        wake_.notify_all();
    }
    run_chunk(0);
    for (int check = 0; pending_.load(std::memory_order_acquire) != 0; ++check) wait_step(check);
    job_ = nullptr;
    if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
}

// Returns false when the pool is stopping.
bool ThreadPool::wait_for_job(uint64_t& seen_generation) {
    const auto sleep_at = std::chrono::steady_clock::now() + kYieldUntilSleep;
    for (int check = 0;; ++check) {
        if (stopping_.load(std::memory_order_relaxed)) return false;
        if (generation_.load(std::memory_order_acquire) != seen_generation) break;
        wait_step(check);
        if (check >= kPureSpinChecks && std::chrono::steady_clock::now() > sleep_at) {
            std::unique_lock lock(mutex_);
            sleeping_.fetch_add(1, std::memory_order_seq_cst);
            wake_.wait(lock, [&] { return stopping_.load() || generation_.load(std::memory_order_seq_cst) != seen_generation; });
            sleeping_.fetch_sub(1);
        }
    }
    seen_generation = generation_.load(std::memory_order_acquire);
    return true;
}

void ThreadPool::worker_loop(int worker_index) {
    uint64_t seen_generation = 0;
    while (wait_for_job(seen_generation)) {
        run_chunk(worker_index);
        pending_.fetch_sub(1, std::memory_order_acq_rel);
    }
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
