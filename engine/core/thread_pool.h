#pragma once
// A persistent pool of worker threads for data-parallel loops. The calling thread takes
// part in the work, so a pool of N threads starts N - 1 workers.
//
// A decode step runs a few hundred short parallel loops back to back, so waking sleeping
// threads through the kernel for each one would cost more than some loops take. Workers
// therefore spin (with a pause instruction) for a short while after each job and only then
// sleep on a condition variable; the caller spins until its loop is done.
//
// Each thread owns one contiguous share of a loop's items, which keeps the weight streams of
// a matrix product long. Cut into pieces (Split::pieces), a share that its thread has not
// got to can be taken from the back by a thread done with its own; the pieces shrink
// towards the end of a share, so the threads finish close together. A worker that starts
// late (its vCPU descheduled, another program on its core) or runs slower does not make
// the caller wait for all of its share; the caller then waits only for the pieces that
// workers have started.
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

    // How a loop's items reach fn. `shares`: one call per thread, over its own share, as
    // per-thread partial results (sums reduced afterwards) need to stay the same from run to
    // run. `pieces`: each share cut into pieces that shrink towards its end (a quarter of
    // what is left, in whole multiples of 32 items from the share's start), one call per
    // piece; a thread done with its own share takes the unstarted back half of another's
    // (from the piece boundary that leaves its owner at most half).
    // The pieces depend only on the item count and the pool size, so results that depend on
    // where the work is cut stay the same, but which thread runs a piece depends on timing.
    enum class Split { shares, pieces };

    // Runs fn(begin, end) over disjoint ranges that cover [0, n_items) once, on the pool's
    // threads; returns when all are done. The first exception thrown is rethrown here. Not
    // reentrant: fn must not call parallel_for on the same pool. At most 2^32 - 1 items.
    void parallel_for(int64_t n_items, const std::function<void(int64_t, int64_t)>& fn, Split split = Split::shares);
    // The same, also passing the index (0 .. size()-1) of the thread running each range, for
    // per-thread scratch buffers. With pieces a thread may run several ranges, one after
    // another.
    void parallel_for_indexed(int64_t n_items, const std::function<void(int, int64_t, int64_t)>& fn,
                              Split split = Split::shares);

    // Physical cores of this machine (logical CPUs when that cannot be determined).
    static int default_thread_count();
    // The most threads a pool takes; the constructor throws InvalidArgument above it (a
    // thread per requested count would exhaust the process ids long before helping).
    static int max_thread_count();
    static constexpr int kMaxThreadsPerLogicalCpu = 4;

private:
    static int checked_thread_count(int n_threads);
    void worker_loop(int worker_index);
    void run_share(int index) noexcept;
    bool claim_piece(int index, int64_t& begin, int64_t& end);
    bool take_from_others(int thief, int64_t& begin, int64_t& end, int64_t& share_end);
    bool wait_for_job(uint64_t& seen_generation);

    // What nobody has started of one thread's share of the current loop, [first, end)
    // packed in one word (first in the high half), so that the owner's claims from the
    // front and another thread's from the back are single compare-and-swaps. Each on its
    // own cache line: the owner claims from its line without disturbing the other threads.
    struct alignas(64) Share {
        std::atomic<uint64_t> left{0};
        int64_t end = 0;  // of the whole share, where its piece boundaries are counted to
    };

    int n_threads_;
    std::vector<std::thread> workers_;
    // The job. What the caller writes, what the workers poll and what they count lie on
    // separate cache lines: a line that both sides write would move between the cores
    // several times per loop, and a decode step runs a few hundred loops.
    alignas(64) const std::function<void(int, int64_t, int64_t)>* job_ = nullptr;
    Split split_ = Split::shares;
    uint64_t generation_ = 0;  // the caller's count of jobs
    std::vector<Share> shares_;
    std::atomic<bool> stopping_{false};
    // generation * 2 + 1 while a job takes workers, generation * 2 once the caller has closed
    // it. Workers poll it for a new generation.
    alignas(64) std::atomic<uint64_t> state_{0};
    // Workers inside the current job: the caller waits for them after closing it.
    alignas(64) std::atomic<int> active_{0};
    alignas(64) std::atomic<int> sleeping_{0};
    std::mutex mutex_;
    std::condition_variable wake_;
    std::mutex error_mutex_;
    std::exception_ptr first_error_;
};

}  // namespace inferscope
