#include "engine/core/thread_pool.h"

#include <fstream>
#include <set>
#include <string>
#include <utility>

namespace inferscope {

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_ready_.notify_all();
    for (auto& worker : workers_) worker.join();
}

namespace {
std::pair<int64_t, int64_t> chunk_of(int64_t n_items, int n_chunks, int index) {
    const int64_t base = n_items / n_chunks;
    const int64_t extra = n_items % n_chunks;
    const int64_t begin = index * base + std::min<int64_t>(index, extra);
    return {begin, begin + base + (index < extra ? 1 : 0)};
}
}  // namespace

void ThreadPool::parallel_for(int64_t n_items, const std::function<void(int64_t, int64_t)>& fn) {
    if (n_items <= 0) return;
    if (n_threads_ == 1 || n_items == 1) {
        fn(0, n_items);
        return;
    }
    {
        std::lock_guard lock(mutex_);
        job_ = &fn;
        job_items_ = n_items;
        pending_ = n_threads_ - 1;
        first_error_ = nullptr;
        ++generation_;
    }
    work_ready_.notify_all();
    try {
        const auto [begin, end] = chunk_of(n_items, n_threads_, 0);
        if (begin < end) fn(begin, end);
    } catch (...) {
        std::lock_guard lock(mutex_);
        if (!first_error_) first_error_ = std::current_exception();
    }
    std::unique_lock lock(mutex_);
    work_done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    if (first_error_) std::rethrow_exception(std::exchange(first_error_, nullptr));
}

void ThreadPool::worker_loop(int worker_index) {
    uint64_t seen_generation = 0;
    for (;;) {
        const std::function<void(int64_t, int64_t)>* job;
        int64_t items;
        {
            std::unique_lock lock(mutex_);
            work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen_generation; });
            if (stopping_) return;
            seen_generation = generation_;
            job = job_;
            items = job_items_;
        }
        try {
            const auto [begin, end] = chunk_of(items, n_threads_, worker_index);
            if (begin < end) (*job)(begin, end);
        } catch (...) {
            std::lock_guard lock(mutex_);
            if (!first_error_) first_error_ = std::current_exception();
        }
        {
            std::lock_guard lock(mutex_);
            --pending_;
        }
        work_done_.notify_one();
    }
}

int ThreadPool::default_thread_count() {
    // Count distinct (physical id, core id) pairs; hyper-threads share a core and do not
    // speed up memory-bound decode.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::set<std::pair<std::string, std::string>> cores;
    std::string line, physical_id, core_id;
    while (std::getline(cpuinfo, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
        if (line.rfind("physical id", 0) == 0) physical_id = value;
        if (line.rfind("core id", 0) == 0) {
            core_id = value;
            cores.emplace(physical_id, core_id);
        }
    }
    if (!cores.empty()) return static_cast<int>(cores.size());
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace inferscope
