#include "engine/core/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace inferscope {
namespace {

// A lost wake-up would leave parallel_for waiting forever: fail loudly instead of hanging.
class Watchdog {
public:
    explicit Watchdog(std::chrono::seconds limit)
        : thread_([this, limit] {
              std::unique_lock lock(mutex_);
              if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
                  std::fprintf(stderr, "thread pool test still waiting after %lld s: a job was never picked up\n",
                               static_cast<long long>(limit.count()));
                  std::abort();
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        done_cv_.notify_all();
        thread_.join();
    }

private:
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = false;
    std::thread thread_;
};

TEST(ThreadPool, CoversEveryItemOnceForEveryThreadCount) {
    for (int threads = 1; threads <= 4; ++threads) {
        ThreadPool pool(threads);
        for (int64_t n : {0, 1, 2, 3, 7, 1000}) {
            std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
            std::vector<std::atomic<int>> chunks_per_thread(static_cast<size_t>(threads));
            pool.parallel_for_indexed(n, [&](int thread, int64_t begin, int64_t end) {
                ASSERT_GE(thread, 0);
                ASSERT_LT(thread, threads);
                chunks_per_thread[static_cast<size_t>(thread)]++;
                for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
            });
            for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " threads, n " << n;
            for (auto& c : chunks_per_thread) EXPECT_LE(c.load(), 1) << "a thread index ran two chunks";
        }
    }
}

// Workers sleep on a condition variable after about 2 ms without work; every job after such
// a pause must still reach them (the caller runs only its own chunk, so a worker that missed
// the job would leave its items untouched and the loop unfinished).
TEST(ThreadPool, WakesWorkersThatHaveGoneToSleep) {
    const Watchdog watchdog(std::chrono::seconds(60));
    ThreadPool pool(3);
    for (int round = 0; round < 30; ++round) {
        std::this_thread::sleep_for(std::chrono::microseconds(round % 2 == 0 ? 3000 : 1500 + 100 * round));
        std::mutex ids_mutex;
        std::set<std::thread::id> ids;
        std::atomic<int64_t> sum{0};
        pool.parallel_for(3, [&](int64_t begin, int64_t end) {
            {
                std::lock_guard lock(ids_mutex);
                ids.insert(std::this_thread::get_id());
            }
            for (int64_t i = begin; i < end; ++i) sum += i + 1;
        });
        EXPECT_EQ(sum.load(), 6) << "round " << round;
        EXPECT_EQ(ids.size(), 3u) << "round " << round << ": each chunk runs on its own thread";
    }
}

// Jobs back to back, as in a decode step (the workers spin between them), and with short
// pauses around the switch from spinning to yielding.
TEST(ThreadPool, RunsManyShortJobsBackToBack) {
    const Watchdog watchdog(std::chrono::seconds(60));
    ThreadPool pool(2);
    std::vector<int64_t> values(257);
    for (int job = 0; job < 20000; ++job) {
        if (job % 1000 == 999) std::this_thread::sleep_for(std::chrono::microseconds(50 * (job / 1000)));
        pool.parallel_for(static_cast<int64_t>(values.size()), [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) values[static_cast<size_t>(i)] += i;
        });
    }
    for (size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], 20000 * static_cast<int64_t>(i)) << "item " << i;
}

TEST(ThreadPool, RethrowsAnExceptionAndStaysUsable) {
    ThreadPool pool(2);
    EXPECT_THROW(pool.parallel_for(10,
                                   [](int64_t begin, int64_t) {
                                       if (begin > 0) throw std::runtime_error("chunk failed");
                                   }),
                 std::runtime_error);
    std::atomic<int64_t> count{0};
    pool.parallel_for(10, [&](int64_t begin, int64_t end) { count += end - begin; });
    EXPECT_EQ(count.load(), 10);
}

}  // namespace
}  // namespace inferscope
