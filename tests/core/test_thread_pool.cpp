#include "engine/core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <string>
#include <vector>

#include "engine/core/error.h"

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

TEST(ThreadPool, CoversEveryItemOnceForEveryThreadCountAndSplit) {
    for (const ThreadPool::Split split : {ThreadPool::Split::shares, ThreadPool::Split::pieces}) {
        for (int threads = 1; threads <= 4; ++threads) {
            ThreadPool pool(threads);
            for (int64_t n : {0, 1, 2, 3, 7, 63, 64, 1000, 4099}) {
                std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
                std::vector<std::atomic<int>> running(static_cast<size_t>(threads));
                pool.parallel_for_indexed(n, [&](int thread, int64_t begin, int64_t end) {
                    ASSERT_GE(thread, 0);
                    ASSERT_LT(thread, threads);
                    ASSERT_LT(begin, end);
                    EXPECT_EQ(running[static_cast<size_t>(thread)]++, 0) << "two ranges at once on thread index " << thread;
                    for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)]++;
                    running[static_cast<size_t>(thread)]--;
                }, split);
                for (int64_t i = 0; i < n; ++i) {
                    EXPECT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " threads, n " << n;
                }
            }
        }
    }
}

// Workers sleep on a condition variable after about 2 ms without work; every job after such
// a pause must still reach them (with shares each thread runs its own, so a worker that
// missed the job would leave its items untouched and the loop unfinished).
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
        EXPECT_EQ(ids.size(), 3u) << "round " << round << ": each share runs on its own thread";
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

// A worker held up in its first piece (here: asleep) leaves the rest of its share to the
// caller, which would otherwise wait for it with its own share done; the ranges are the same
// pieces as when nobody is held up.
TEST(ThreadPool, PiecesOfAWorkerThatIsHeldUpGoToTheCaller) {
    const Watchdog watchdog(std::chrono::seconds(60));
    ThreadPool pool(2);
    const auto run = [&](bool hold_up_worker) {
        std::mutex ranges_mutex;
        std::set<std::pair<int64_t, int64_t>> ranges;
        std::atomic<int64_t> items_by_caller{0};
        std::atomic<bool> worker_started{false};
        pool.parallel_for_indexed(2048, [&](int thread, int64_t begin, int64_t end) {
            if (hold_up_worker && thread == 1 && !worker_started.exchange(true)) {
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
            if (hold_up_worker && thread == 0) {
                while (!worker_started) std::this_thread::yield();  // the worker holds its first piece
            }
            if (thread == 0) items_by_caller += end - begin;
            std::lock_guard lock(ranges_mutex);
            ranges.emplace(begin, end);
        }, ThreadPool::Split::pieces);
        return std::make_pair(items_by_caller.load(), ranges);
    };
    const auto [caller_items, held_up_ranges] = run(true);
    // Shares of 1024 items in pieces of 256, 192, 160, 128, 96, 64, 32, 32 and 64: the worker
    // ran only the piece it held.
    EXPECT_EQ(caller_items, 2048 - 256) << "the caller waited for the held-up worker's share";
    EXPECT_EQ(held_up_ranges.size(), 18u);
    EXPECT_EQ(held_up_ranges, run(false).second) << "where the work is cut depends on timing";
}

// Pieces are a quarter of what is left of their share, in whole multiples of 32 items from
// the share's start, so the last ones are short: a thread done with its share waits at most
// for a short piece of another's. (The output projection of a 0.5B model has 151936 rows.)
TEST(ThreadPool, PiecesShrinkTowardsTheEndOfEachShare) {
    ThreadPool pool(2);
    const int64_t n = 151936, share = n / 2;
    std::mutex ranges_mutex;
    std::set<std::pair<int64_t, int64_t>> ranges;
    pool.parallel_for_indexed(n, [&](int, int64_t begin, int64_t end) {
        std::lock_guard lock(ranges_mutex);
        ranges.emplace(begin, end);
    }, ThreadPool::Split::pieces);
    for (const int64_t share_begin : {int64_t{0}, share}) {
        std::vector<int64_t> sizes;
        int64_t at = share_begin;
        for (auto it = ranges.lower_bound({share_begin, 0}); it != ranges.end() && it->first < share_begin + share; ++it) {
            ASSERT_EQ(it->first, at) << "pieces of a share follow each other";
            sizes.push_back(it->second - it->first);
            at = it->second;
        }
        ASSERT_EQ(at, share_begin + share) << "the pieces cover the share";
        ASSERT_GE(sizes.size(), 3u);
        EXPECT_EQ(sizes.front(), 19008) << "a quarter of the share (18992), rounded up to 32";
        EXPECT_LE(sizes.back(), 64) << "the share's last piece";
        for (size_t i = 0; i + 1 < sizes.size(); ++i) {
            EXPECT_EQ(sizes[i] % 32, 0) << "piece " << i << " of the share at " << share_begin;
            if (i + 2 < sizes.size()) {
                EXPECT_LE(sizes[i + 1], sizes[i]) << "piece " << i + 1 << " grew";
            }
        }
    }
}

// With shares, each thread runs its own share in one call even when its worker is late, so
// per-thread partial sums are the same from run to run.
TEST(ThreadPool, SharesAreOneCallOnTheirOwnThread) {
    const Watchdog watchdog(std::chrono::seconds(60));
    ThreadPool pool(2);
    for (int round = 0; round < 20; ++round) {
        if (round % 5 == 4) std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the worker goes to sleep
        std::atomic<int> calls{0};
        pool.parallel_for_indexed(2048, [&](int thread, int64_t begin, int64_t end) {
            EXPECT_EQ(begin, thread * 1024) << "round " << round;
            EXPECT_EQ(end, begin + 1024) << "round " << round;
            ++calls;
        });
        EXPECT_EQ(calls.load(), 2) << "round " << round;
    }
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

TEST(ThreadPool, RefusesMoreThreadsThanTheMachineCanUse) {
    const int most = ThreadPool::max_thread_count();
    EXPECT_EQ(most, ThreadPool::kMaxThreadsPerLogicalCpu * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    try {
        ThreadPool pool(100000);
        FAIL() << "a pool of 100000 threads was started";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("100000 threads: at most " + std::to_string(most)), std::string::npos) << e.what();
    }
    EXPECT_EQ(ThreadPool(most).size(), most);
    EXPECT_EQ(ThreadPool(0).size(), 1);
}

}  // namespace
}  // namespace inferscope
