// Files vkformer writes (--logits-out, --json-out, --svg, the shader and pipeline caches)
// cannot be turned against the user running it, root included: a symlink or a FIFO
// planted at a likely temporary name, a device node, a FIFO or a symlink at the output
// path. Nothing is followed, replaced or waited on that the run was not asked to write.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <chrono>
#include <sstream>
#include <thread>

#include "cli/run_cli.hpp"

namespace fs = std::filesystem;

namespace vkf::test {
namespace {

const std::string kDates = std::string(VKF_SOURCE_DIR) + "/samples/dates";
const std::string kSecret = "root-only secret\n";
constexpr uint64_t kLogitsBytes = 128 + 2 * 54 * 4;  // .npy header + float32 [2, 54]

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

using Dir = TempDir;

std::vector<std::string> score_to(const std::string& out) {
  return {"score", "--model", kDates, "--src-ids", "5,6", "--tgt-ids", "1,7", "--logits-out", out};
}

// What an attacker who owns the output's directory plants: for the pids the next runs
// will likely get, `<name>.tmp<pid>` (the old temporary name) as `make(path)`, and a few
// guesses at other patterns.
void plant(const std::string& name, const std::function<void(const std::string&)>& make) {
  const pid_t me = ::getpid();
  for (pid_t pid = me; pid < me + 3000; ++pid) make(name + ".tmp" + std::to_string(pid));
  for (const char* suffix : {".tmp", "~", ".new", ".part"}) make(name + suffix);
}

void expect_secret_intact(const std::string& victim) {
  EXPECT_EQ(slurp(victim), kSecret) << victim << " was written through a planted link";
  struct stat st{};
  ASSERT_EQ(::stat(victim.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

std::string make_victim(const Dir& d) {
  const std::string victim = d / "root-only";
  std::ofstream(victim) << kSecret;
  ::chmod(victim.c_str(), 0600);
  return victim;
}

TEST(OutputFiles, SymlinksAtTemporaryNamesAreNeverFollowed) {
  Dir d;
  const std::string victim = make_victim(d);
  fs::create_directory(d / "out");
  plant(d / "out/logits.npy", [&](const std::string& p) { fs::create_symlink(victim, p); });
  const CliRun r = run_cli(score_to(d / "out/logits.npy"));
  EXPECT_EQ(r.status, 0) << r.err;
  expect_secret_intact(victim);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(d / "out/logits.npy")));
  EXPECT_EQ(fs::file_size(d / "out/logits.npy"), kLogitsBytes);
}

TEST(OutputFiles, FifosAtTemporaryNamesDoNotHang) {
  Dir d;
  plant(d / "logits.npy", [&](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0); });
  const CliRun r = run_cli(score_to(d / "logits.npy"));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(fs::file_size(d / "logits.npy"), kLogitsBytes);
}

TEST(OutputFiles, ASymlinkAtTheOutputPathIsRefusedByName) {
  Dir d;
  const std::string victim = make_victim(d);
  fs::create_symlink(victim, d / "logits.npy");
  const CliRun r = run_cli(score_to(d / "logits.npy"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("is a symbolic link (to " + victim + ")"), std::string::npos) << r.err;
  expect_secret_intact(victim);
  EXPECT_TRUE(fs::is_symlink(d / "logits.npy"));  // left as it was
}

TEST(OutputFiles, AnExistingFileKeepsItsMode) {
  Dir d;
  std::ofstream(d / "logits.npy") << "old";
  ::chmod((d / "logits.npy").c_str(), 0600);
  const CliRun r = run_cli(score_to(d / "logits.npy"));
  EXPECT_EQ(r.status, 0) << r.err;
  struct stat st{};
  ASSERT_EQ(::stat((d / "logits.npy").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(uint64_t(st.st_size), kLogitsBytes);
  for (const auto& e : fs::directory_iterator(d.path))
    EXPECT_EQ(e.path().filename(), "logits.npy") << "left behind: " << e.path();
}

TEST(OutputFiles, ADirectoryOrSocketIsRefused) {
  Dir d;
  fs::create_directory(d / "logits.npy");
  const CliRun r = run_cli(score_to(d / "logits.npy"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("it is a directory"), std::string::npos) << r.err;
}

TEST(OutputFiles, ACharacterDeviceIsWrittenInPlaceNeverReplaced) {
  if (::geteuid() != 0) GTEST_SKIP() << "making a device node needs root";
  Dir d;
  const std::string node = d / "null";  // a /dev/null of our own: the machine's stays safe if this fails
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << std::strerror(errno);
  const CliRun r = run_cli(score_to(node));
  EXPECT_EQ(r.status, 0) << r.err;
  struct stat st{};
  ASSERT_EQ(::lstat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << node << " was replaced";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  // /dev/full in place: the write fails, and says so.
  const std::string full = d / "full";
  ASSERT_EQ(::mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  const CliRun f = run_cli(score_to(full));
  EXPECT_EQ(f.status, 1);
  EXPECT_NE(f.err.find("cannot write " + full + ": No space left on device"), std::string::npos) << f.err;
  ASSERT_EQ(::lstat(full.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

TEST(OutputFiles, AFifoIsRefusedWhenNothingReadsItAndWrittenWhenSomethingDoes) {
  Dir d;
  const std::string fifo = d / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const CliRun lonely = run_cli(score_to(fifo));
  EXPECT_FALSE(lonely.timed_out);
  EXPECT_EQ(lonely.status, 1);
  EXPECT_NE(lonely.err.find("cannot write " + fifo + ": it is a FIFO that nothing reads"), std::string::npos)
      << lonely.err;

  std::string received;
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);  // a reader is there before the run
  ASSERT_GE(reader, 0);
  std::thread drain([&] {
    ::fcntl(reader, F_SETFL, 0);
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = ::read(reader, buf, sizeof buf);
      if (n > 0) received.append(buf, size_t(n));
      else if (n == 0 && !received.empty()) break;
      else if (n < 0 && errno != EINTR && errno != EAGAIN) break;
      else if (n == 0) ::usleep(1000);  // no writer yet
    }
  });
  const CliRun fed = run_cli(score_to(fifo));
  drain.join();
  ::close(reader);
  EXPECT_EQ(fed.status, 0) << fed.err;
  EXPECT_EQ(received.size(), kLogitsBytes);
  struct stat st{};
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << fifo << " was replaced";
}

// The caches: their temporary names are planted too, and a warm run writes nothing.
TEST(OutputFiles, CacheWritesFollowNothingAndAWarmRunWritesNothing) {
  Dir d;
  const std::string victim = make_victim(d);
  const std::string cache = d / "cache";
  setenv("VKF_CACHE_DIR", cache.c_str(), 1);
  const std::vector<std::string> translate = {"translate", "--model", kDates, "3/3/98"};
  CliRun r = run_cli(translate);  // fills the cache
  ASSERT_EQ(r.status, 0) << r.err;
  std::string pipelines;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().extension() == ".bin") pipelines = e.path();
  ASSERT_FALSE(pipelines.empty());
  struct stat before{};
  ASSERT_EQ(::stat(pipelines.c_str(), &before), 0);
  r = run_cli(translate);
  ASSERT_EQ(r.status, 0) << r.err;
  struct stat after{};
  ASSERT_EQ(::stat(pipelines.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "a warm run rewrote the unchanged pipeline cache";

  // Now an attacker's links and FIFOs at the temporary names of a cache that must be rewritten.
  fs::remove(pipelines);
  for (const auto& e : fs::directory_iterator(cache + "/spirv")) fs::remove(e.path());
  plant(pipelines, [&](const std::string& p) { fs::create_symlink(victim, p); });
  plant(pipelines + "x", [&](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0); });
  r = run_cli(translate);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "3/3/98 -> 1998-03-03\n");
  expect_secret_intact(victim);
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(pipelines)));
  unsetenv("VKF_CACHE_DIR");
}

TEST(OutputFiles, AReadOnlyCacheIsUsedQuietly) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a read-only file system needs root";
  Dir d;
  const std::string cache = d / "cache";
  fs::create_directory(cache);
  if (::mount("tmpfs", cache.c_str(), "tmpfs", 0, "size=64m") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs: " << std::strerror(errno);
  setenv("VKF_CACHE_DIR", cache.c_str(), 1);
  const std::vector<std::string> translate = {"translate", "--model", kDates, "3/3/98"};
  CliRun r = run_cli(translate);
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(::mount("tmpfs", cache.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, "size=64m"), 0) << std::strerror(errno);
  r = run_cli(translate);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err.find("cache not saved"), std::string::npos) << r.err;
  ::umount2(cache.c_str(), MNT_DETACH);
  unsetenv("VKF_CACHE_DIR");
}

}  // namespace
}  // namespace vkf::test
