// How many evaluations a second one workspace's store takes from N processes writing at once
// (issue 46, item 1: a slot pool, Slurm jobs' results and evolve's batches all end in one
// lathe.db). Each writer is a process of its own (as lathe's are: bench --in-flight, solve's
// jobs, a Slurm submitter storing what comes back), opens the store itself and adds evaluations
// shaped like a timed one (a paired series and an A/A control of --samples rounds each, a
// diagnostics text); every add is one transaction, as lathe's are. Prints, per writer count: the
// evaluations stored, wall seconds, evaluations a second, the slowest add and the failures
// (SQLITE_BUSY past the store's 10 s busy timeout would show there). Not a test.
//
//   build/bench/store/store_writes [--writers 1,2,4,8] [--per-writer 200] [--samples 200] [--dir D]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/evaluation.h"
#include "store/store.h"

namespace fs = std::filesystem;
using namespace lathe;

namespace {

evaluation shaped(int writer, int i, int samples) {
  evaluation e;
  e.task = "bench_task_" + std::to_string(writer % 4);
  e.kernel_hash = "k" + std::to_string(writer) + "-" + std::to_string(i);
  e.kernel_name = "candidate";
  e.baseline_hash = "b0";
  e.baseline_name = "naive";
  e.result = outcome::ok;
  e.message = "correct on every shape set and seed; timed";
  e.diagnostics = std::string(2000, 'd');
  paired_series p;
  for (int k = 0; k < samples; ++k) {
    p.a_seconds.push_back(1e-4 * (1 + 0.01 * (k % 7)));
    p.b_seconds.push_back(2e-4 * (1 + 0.01 * (k % 5)));
    p.a_first.push_back(static_cast<uint8_t>(k % 2));
    p.pair.push_back(static_cast<uint8_t>(k % 4));
  }
  p.ratio = 2.0, p.ci_low = 1.9, p.ci_high = 2.1;
  e.paired = p;
  e.aa = p;
  e.median_seconds = 1e-4;
  e.prov = {"human", "bench", false};
  return e;
}

struct tally {
  int stored = 0, failed = 0;
  double slowest = 0;
};

// One writer process: its tally written to `fd` as three numbers.
[[noreturn]] void writer(const fs::path& db, int w, int n, int samples, int fd) {
  tally t;
  auto s = store::open(db);
  if (!s) {
    std::fprintf(stderr, "writer %d: %s\n", w, s.error().message.c_str());
    t.failed = n;
  } else {
    for (int i = 0; i < n; ++i) {
      const evaluation e = shaped(w, i, samples);
      const auto t0 = std::chrono::steady_clock::now();
      auto id = s->add_evaluation(e);
      t.slowest = std::max(t.slowest, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (id) ++t.stored;
      else {
        ++t.failed;
        if (t.failed == 1) std::fprintf(stderr, "writer %d: %s\n", w, id.error().message.c_str());
      }
    }
  }
  const std::string line = std::to_string(t.stored) + " " + std::to_string(t.failed) + " " + std::to_string(t.slowest) + "\n";
  (void)!write(fd, line.data(), line.size());
  _exit(0);
}

std::vector<int> list_of(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');) out.push_back(std::stoi(x));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> writers = {1, 2, 4, 8};
  int per = 200, samples = 200;
  fs::path dir = fs::temp_directory_path() / ("lathe-store-writes-" + std::to_string(getpid()));
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--writers") writers = list_of(v);
    else if (a == "--per-writer") per = std::stoi(v);
    else if (a == "--samples") samples = std::stoi(v);
    else if (a == "--dir") dir = v;
    else {
      std::fprintf(stderr, "usage: %s [--writers 1,2,4,8] [--per-writer 200] [--samples 200] [--dir D]\n", argv[0]);
      return 2;
    }
  }
  std::printf("writers  stored  failed  wall_s  evals_per_s  slowest_add_ms  (each %d rounds x2 series)\n", samples);
  for (int n : writers) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fs::path db = dir / "lathe.db";
    if (auto s = store::open(db); !s) {  // the schema made once, before the writers race
      std::fprintf(stderr, "%s\n", s.error().message.c_str());
      return 1;
    }
    int fds[2];
    if (pipe(fds) != 0) return 1;
    const auto t0 = std::chrono::steady_clock::now();
    for (int w = 0; w < n; ++w)
      if (fork() == 0) writer(db, w, per, samples, fds[1]);
    close(fds[1]);
    for (int w = 0; w < n; ++w) wait(nullptr);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    tally all;
    FILE* in = fdopen(fds[0], "r");
    for (tally t; std::fscanf(in, "%d %d %lf", &t.stored, &t.failed, &t.slowest) == 3;) {
      all.stored += t.stored, all.failed += t.failed;
      all.slowest = std::max(all.slowest, t.slowest);
    }
    fclose(in);
    std::printf("%7d  %6d  %6d  %6.2f  %11.1f  %14.1f\n", n, all.stored, all.failed, wall, all.stored / wall,
                all.slowest * 1e3);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return 0;
}
