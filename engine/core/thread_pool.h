#pragma once
// A persistent pool of worker threads for data-parallel loops. The calling thread takes
// part in the work, so a pool of N threads starts N - 1 workers.
//
// A decode step runs a few hundred short parallel loops back to back, so waking sleeping
// threads through the kernel for each one would cost more than some loops take. Workers
// therefore spin (with a pause instruction) for a short while after each job and only then
// sleep on a condition variable; the caller spins until its loop is done.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace inferscope {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Splits [0, n_items) into one contiguous chunk per thread and runs fn(begin, end) on
    // each; returns when all are done. The first exception thrown is rethrown here. Not
    // reentrant: fn must not call parallel_for on the same pool.
    void parallel_for(int64_t n_items, const std::function<void(int64_t, int64_t)>& fn);
    // The same, also passing the index (0 .. size()-1) of the thread running each chunk, for
    // per-thread scratch buffers.
    void parallel_for_indexed(int64_t n_items, const std::function<void(int, int64_t, int64_t)>& fn);

    // Physical cores of this machine (logical CPUs when that cannot be determined).
    static int default_thread_count();

private:
    void worker_loop(int worker_index);
    void run_chunk(int index) noexcept;
    bool wait_for_job(uint64_t& seen_generation);

    int n_threads_;
    std::vector<std::thread> workers_;
    // The job: published by bumping generation_ (release); workers acquire it. What the
    // caller writes, what the workers poll and what they count down lie on separate cache
    // lines: a line that both sides write would move between the cores several times per
    // loop, and a decode step runs a few hundred loops.
    alignas(64) const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
    int64_t job_items_ = 0;
    std::atomic<bool> stopping_{false};
    alignas(64) std::atomic<uint64_t> generation_{0};
    alignas(64) std::atomic<int> pending_{0};
    alignas(64) std::atomic<int> sleeping_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::mutex error_mutex_;
    std::exception_ptr first_error_;
};

}  // namespace inferscope
