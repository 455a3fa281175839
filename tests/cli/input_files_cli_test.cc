// Each command that reads a file refuses a special file by name and reason instead of reading
// without end (run /dev/zero reached 15.5 GB) or blocking on a FIFO.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/test_helpers.h"

namespace cs {
namespace {

using testing_support::run_cli;
using testing_support::temp_path;

void expect_refused(std::vector<std::string> args, const std::string& path,
                    const std::string& reason) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find(path + ": is " + reason + ", not a regular file"), std::string::npos)
      << r.err;
}

TEST(InputFilesCli, DevZeroIsRefusedByEveryReader) {
  const std::string dev = "/dev/zero", device = "a character device";
  expect_refused({"run", dev}, dev, device);
  expect_refused({"memory", dev}, dev, device);
  expect_refused({"replay", dev}, dev, device);
  expect_refused({"run", "--preset", "llama3-8b", "--hf-config", dev}, dev, device);
  expect_refused({"replay", "--chakra", temp_path("none"), "--comm-groups", dev}, dev, device);
}

// A GPU, topology or stack named by a path goes through the same reader: it said "neither a
// preset nor a readable file" for /dev/zero and a FIFO, not what the path is.
TEST(InputFilesCli, PresetsNamedByASpecialFileAreRefusedSayingWhatItIs) {
  const std::string dev = "/dev/zero", device = "a character device";
  for (const char* field : {"cluster.topology", "cluster.gpu", "stack_variant"}) {
    SCOPED_TRACE(field);
    expect_refused({"run", "--preset", "llama3-8b", "--set", std::string(field) + "=" + dev}, dev,
                   device);
  }
  const std::string fifo = temp_path("topology.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused({"collective", "--op", "all_reduce", "--gpus", "8", "--topology", fifo}, fifo,
                 "a FIFO (named pipe)");
}

TEST(InputFilesCli, AChakraRankLinkedToDevZeroIsRefused) {
  const std::string prefix = temp_path("linked");
  std::filesystem::remove(prefix + ".0.et");
  std::filesystem::create_symlink("/dev/zero", prefix + ".0.et");
  expect_refused({"replay", "--chakra", prefix}, prefix + ".0.et", "a character device");
}

TEST(InputFilesCli, AFifoIsRefusedWithoutBlocking) {
  const std::string fifo = temp_path("config.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused({"run", fifo}, fifo, "a FIFO (named pipe)");
  expect_refused({"replay", fifo}, fifo, "a FIFO (named pipe)");
  expect_refused({"run", "--preset", "llama3-8b", "--hf-config", fifo}, fifo,
                 "a FIFO (named pipe)");
}

}  // namespace
}  // namespace cs
