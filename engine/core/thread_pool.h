#pragma once
// A persistent pool of worker threads for data-parallel loops. The calling thread takes
// part in the work, so a pool of N threads starts N - 1 workers.
#include <condition_variable>
#include <cstdint>
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

    // Splits [0, n_items) into contiguous chunks and runs fn(begin, end) on them, one chunk
    // per thread; returns when all are done. The first exception thrown is rethrown here.
    void parallel_for(int64_t n_items, const std::function<void(int64_t, int64_t)>& fn);

    // Physical cores of this machine (logical CPUs when that cannot be determined).
    static int default_thread_count();

private:
    void worker_loop(int worker_index);

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable work_ready_;
    std::condition_variable work_done_;
    const std::function<void(int64_t, int64_t)>* job_ = nullptr;
    int64_t job_items_ = 0;
    uint64_t generation_ = 0;
    int pending_ = 0;
    bool stopping_ = false;
    std::exception_ptr first_error_;
};

}  // namespace inferscope
