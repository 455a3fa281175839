#include "sim/core/batch.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace cs {

void run_batch(std::size_t n, int jobs, const std::function<void(std::size_t)>& body,
               const BatchProgress& on_done) {
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::size_t done = 0;
  std::exception_ptr failure;
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        body(i);
      } catch (...) {
        // Out of memory or a bug: finish what is running, hand out nothing more, rethrow.
        const std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
        next = n;
        return;
      }
      const std::lock_guard lock(mutex);
      ++done;
      if (on_done) on_done(done, n);
    }
  };
  const auto threads = static_cast<std::size_t>(std::max(1, jobs));
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(threads, n); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

std::vector<std::size_t> rank_share(std::size_t total, int rank, int ranks) {
  std::vector<std::size_t> mine;
  for (auto i = static_cast<std::size_t>(std::max(rank, 0)); i < total;
       i += static_cast<std::size_t>(std::max(ranks, 1)))
    mine.push_back(i);
  return mine;
}

std::vector<std::string> gathered_lines(const std::vector<std::string>& gathered) {
  std::vector<std::string> lines;
  for (const auto& part : gathered) {
    std::size_t begin = 0;
    for (std::size_t end; (end = part.find('\n', begin)) != std::string::npos; begin = end + 1)
      lines.push_back(part.substr(begin, end - begin));
    if (begin < part.size()) lines.push_back(part.substr(begin));
  }
  return lines;
}

}  // namespace cs
