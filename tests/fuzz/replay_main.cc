// Runs a libFuzzer harness without libFuzzer (gcc, the ASan build of the test suite): every
// file named on the command line, or every file in a named folder (the seed corpus and the
// regression reproducers), then deterministic mutants of each: bytes flipped, set to boundary
// values, inserted, deleted, duplicated, the input cut short. CI runs this under ASan+UBSan in
// place of a libFuzzer build of its own (scripts/fuzz.sh still fuzzes, with coverage, for
// longer runs). A crash names the input it ran: `--only FILE --mutant K` runs it again.
//   g4_fuzz_replay_<name> [--mutants N] [--seconds S] [--only FILE --mutant K] PATH...
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) && __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define G4_REPLAY_DEATH_CALLBACK 1
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// What runs now, for the crash message ("seed FILE mutant K"); written before each input.
char g_current[1024] = "(nothing yet)";

// Once: both ASan's death callback and the SIGABRT it raises after it land here.
void SayCurrent() {
  static volatile sig_atomic_t said = 0;
  if (said) return;
  said = 1;
  const char head[] = "\nfuzz replay: crashed on ";
  (void)!write(2, head, sizeof(head) - 1);
  (void)!write(2, g_current, std::strlen(g_current));
  (void)!write(2, "\n", 1);
}

void OnSignal(int sig) {
  SayCurrent();
  signal(sig, SIG_DFL);
  raise(sig);
}

// splitmix64: the mutants depend only on the seed's name and the mutant's index.
struct Rng {
  uint64_t s;
  uint64_t Next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }
};

uint64_t Hash(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

// One to four edits of `in`; the result grows by at most 64 bytes per edit.
std::vector<uint8_t> Mutate(std::vector<uint8_t> in, Rng& rng) {
  static constexpr uint8_t kBoundary[] = {0, 1, 0x7f, 0x80, 0xff, '"', '{', '}', '\\', '\n'};
  const size_t edits = 1 + rng.Below(4);
  for (size_t e = 0; e < edits; ++e) {
    const size_t n = in.size(), at = rng.Below(n + 1);
    switch (rng.Below(6)) {
      case 0:  // flip one bit
        if (n) in[rng.Below(n)] ^= static_cast<uint8_t>(1u << rng.Below(8));
        break;
      case 1:  // a boundary byte
        if (n) in[rng.Below(n)] = kBoundary[rng.Below(sizeof(kBoundary))];
        break;
      case 2: {  // insert random bytes
        std::vector<uint8_t> add(1 + rng.Below(16));
        for (auto& b : add) b = static_cast<uint8_t>(rng.Next());
        in.insert(in.begin() + at, add.begin(), add.end());
        break;
      }
      case 3:  // delete a range
        if (at < n) {
          const size_t len = 1 + rng.Below(std::min<size_t>(n - at, 64));
          in.erase(in.begin() + at, in.begin() + at + len);
        }
        break;
      case 4:  // duplicate a range
        if (at < n) {
          const size_t len = 1 + rng.Below(std::min<size_t>(n - at, 64));
          std::vector<uint8_t> copy(in.begin() + at, in.begin() + at + len);
          in.insert(in.begin() + rng.Below(n + 1), copy.begin(), copy.end());
        }
        break;
      default:  // cut short
        in.resize(at);
        break;
    }
  }
  return in;
}

bool ReadFile(const std::string& path, std::vector<uint8_t>& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return true;
}

// The regular files named, or found (sorted, not recursively) in the folders named.
bool CollectFiles(const std::vector<std::string>& paths, std::vector<std::string>& files) {
  for (const std::string& p : paths) {
    struct stat st;
    if (stat(p.c_str(), &st) != 0) {
      std::fprintf(stderr, "fuzz replay: cannot open %s\n", p.c_str());
      return false;
    }
    if (!S_ISDIR(st.st_mode)) {
      files.push_back(p);
      continue;
    }
    DIR* d = opendir(p.c_str());
    if (d == nullptr) {
      std::fprintf(stderr, "fuzz replay: cannot list %s\n", p.c_str());
      return false;
    }
    std::vector<std::string> in_dir;
    while (dirent* e = readdir(d)) {
      const std::string f = p + "/" + e->d_name;
      if (e->d_name[0] != '.' && stat(f.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        in_dir.push_back(f);
      }
    }
    closedir(d);
    std::sort(in_dir.begin(), in_dir.end());
    files.insert(files.end(), in_dir.begin(), in_dir.end());
  }
  return true;
}

void Run(const std::vector<uint8_t>& input) {
  LLVMFuzzerTestOneInput(input.empty() ? nullptr : input.data(), input.size());
}

}  // namespace

int main(int argc, char** argv) {
  long mutants = 200, only_mutant = -1;
  double seconds = 10;
  std::string only;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--mutants" && has_value) {
      mutants = std::atol(argv[++i]);
    } else if (a == "--seconds" && has_value) {
      seconds = std::atof(argv[++i]);
    } else if (a == "--only" && has_value) {
      only = argv[++i];
    } else if (a == "--mutant" && has_value) {
      only_mutant = std::atol(argv[++i]);
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "fuzz replay: unknown option %s\n", a.c_str());
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (!only.empty()) paths = {only};
  std::vector<std::string> files;
  if (!CollectFiles(paths, files)) return 2;
  if (files.empty()) {
    std::fprintf(stderr, "fuzz replay: no input files\n");
    return 2;
  }
#ifdef G4_REPLAY_DEATH_CALLBACK
  __sanitizer_set_death_callback(SayCurrent);
#endif
  signal(SIGABRT, OnSignal);
  signal(SIGSEGV, OnSignal);
  signal(SIGFPE, OnSignal);

  // Each seed's bytes, and its mutants' RNG base: the hash of its file name.
  std::vector<std::vector<uint8_t>> seeds(files.size());
  std::vector<uint64_t> seed_hash(files.size());
  for (size_t i = 0; i < files.size(); ++i) {
    if (!ReadFile(files[i], seeds[i])) {
      std::fprintf(stderr, "fuzz replay: cannot read %s\n", files[i].c_str());
      return 2;
    }
    seed_hash[i] = Hash(files[i].substr(files[i].find_last_of('/') + 1));
  }
  long runs = 0;
  if (only_mutant < 0) {
    for (size_t i = 0; i < files.size(); ++i) {
      std::snprintf(g_current, sizeof(g_current), "seed %s", files[i].c_str());
      Run(seeds[i]);
      ++runs;
    }
  }
  // Mutants in rounds over the seeds, until the count or the time is reached.
  const auto start = std::chrono::steady_clock::now();
  const long first = only_mutant < 0 ? 0 : only_mutant;
  const long last = only_mutant < 0 ? mutants : only_mutant + 1;
  long done = 0;
  for (long k = first; k < last; ++k) {
    if (only_mutant < 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                                   .count() > seconds) {
      break;
    }
    for (size_t i = 0; i < files.size(); ++i) {
      Rng rng{seed_hash[i] ^ static_cast<uint64_t>(k)};
      std::snprintf(g_current, sizeof(g_current), "seed %s mutant %ld (--only %s --mutant %ld)",
                    files[i].c_str(), k, files[i].c_str(), k);
      Run(Mutate(seeds[i], rng));
      ++runs;
    }
    ++done;
  }
  std::printf("fuzz replay: %zu seeds, %ld mutants of each, %ld inputs, no crash\n", files.size(),
              done, runs);
  return 0;
}
