// Writer and reader in different processes, as in production.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "control/stats/reader.hpp"
#include "control/stats/writer.hpp"
#include "test_util.hpp"

namespace ws::stats {
namespace {

// The child writes and publishes, tells the parent through a pipe, then waits for a byte
// on another pipe and exits: cleanly (remove) or as if it crashed (_exit, file left).
pid_t spawn_writer(const std::string& path, bool clean, int* ready_fd, int* go_fd) {
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(go[1]);
    Writer w;
    bool ok = w.create(path, {.lcore_ids = {0, 1}});
    auto slot = w.register_metric(
        {.name = "wirespeed_drops_total", .help = "d", .labels = {{"reason", "x"}}});
    ok = ok && slot && w.seal();
    if (ok) {
      w.counter(*slot, 0).add(40);
      w.counter(*slot, 1).add(2);
      w.publish(0);
      w.publish(1);
      w.publish_global();
    }
    char c = ok ? 'y' : 'n';
    (void)!write(ready[1], &c, 1);
    (void)!read(go[0], &c, 1);
    if (clean) w.remove();
    _exit(0);
  }
  close(ready[1]);
  close(go[0]);
  *ready_fd = ready[0];
  *go_fd = go[1];
  return pid;
}

TEST(ForkedWriter, ReaderSeesChildValuesAndCleanExit) {
  test::TempDir dir;
  std::string path = dir.file("f.stats");
  int ready, go;
  pid_t pid = spawn_writer(path, true, &ready, &go);
  ASSERT_GT(pid, 0);
  char c = 0;
  ASSERT_EQ(read(ready, &c, 1), 1);
  ASSERT_EQ(c, 'y');
  Reader r(path);
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  Snapshot s;
  ASSERT_TRUE(r.read(&s));
  EXPECT_EQ(s.catalog->pid, pid);
  EXPECT_EQ(s.sum("wirespeed_drops_total"), 42u);
  ASSERT_EQ(write(go, "g", 1), 1);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(r.refresh(), Liveness::kAbsent);
  close(ready);
  close(go);
}

TEST(ForkedWriter, CrashedWriterIsDeadButLastValuesStayReadable) {
  test::TempDir dir;
  std::string path = dir.file("f.stats");
  int ready, go;
  pid_t pid = spawn_writer(path, false, &ready, &go);
  ASSERT_GT(pid, 0);
  char c = 0;
  ASSERT_EQ(read(ready, &c, 1), 1);
  Reader r(path);
  ASSERT_EQ(r.refresh(), Liveness::kLive);
  ASSERT_EQ(write(go, "g", 1), 1);
  int status = 0;
  waitpid(pid, &status, 0);  // reaped: the pid no longer exists
  EXPECT_EQ(r.refresh(), Liveness::kDead);
  Snapshot s;
  ASSERT_TRUE(r.read(&s)) << "post-mortem values are still there";
  EXPECT_EQ(s.sum("wirespeed_drops_total"), 42u);
  close(ready);
  close(go);
}

}  // namespace
}  // namespace ws::stats
