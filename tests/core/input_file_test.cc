// Every input file is read through read_input_file: special files and oversized files are refused
// before anything is read, so none of them fills memory or blocks.
#include "sim/core/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_helpers.h"

namespace cs {
namespace {

using testing_support::temp_file;
using testing_support::temp_path;

void expect_refused(const std::string& path, const std::string& reason) {
  const InputFile f = read_input_file(path, kMaxTextConfigBytes, "protobuf text config");
  EXPECT_TRUE(f.opened) << path;
  EXPECT_FALSE(f.ok()) << path;
  EXPECT_EQ(f.error.rfind(path + ": ", 0), 0u) << f.error;
  EXPECT_NE(f.error.find(reason), std::string::npos) << f.error;
  EXPECT_TRUE(f.bytes.empty());
}

TEST(InputFile, ReadsARegularFileWhole) {
  const std::string text(100'000, 'x');
  const InputFile f = read_input_file(temp_file("whole.txt", text), 100'000, "test file");
  ASSERT_TRUE(f.ok()) << f.error;
  EXPECT_EQ(f.bytes, text);
}

TEST(InputFile, AMissingFileIsNotOpenedAndSaysWhy) {
  const InputFile f = read_input_file(temp_path("no-such-file"), 100, "test file");
  EXPECT_FALSE(f.opened);
  EXPECT_NE(f.error.find("cannot open"), std::string::npos) << f.error;
}

// /dev/zero once ran `run` to 15.5 GB and `replay` to 16.8 GB before the 2 GiB check.
TEST(InputFile, RefusesDevicesDirectoriesAndLinksToThem) {
  expect_refused("/dev/zero", "is a character device, not a regular file");
  const std::string link = temp_path("rank.0.et");
  std::filesystem::remove(link);
  std::filesystem::create_symlink("/dev/zero", link);
  expect_refused(link, "is a character device");
  expect_refused(::testing::TempDir(), "is a directory");
}

// A FIFO with no writer blocked a plain open forever; it must be refused at once.
TEST(InputFile, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string fifo = temp_path("input.fifo");
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(fifo, "is a FIFO (named pipe)");
}

TEST(InputFile, RefusesAFileAboveItsLimitByItsSize) {
  const InputFile f =
      read_input_file(temp_file("big.txt", std::string(101, 'x')), 100, "test file");
  EXPECT_FALSE(f.ok());
  EXPECT_NE(f.error.find("larger than the 100 bytes a test file may have"), std::string::npos)
      << f.error;
  EXPECT_TRUE(f.bytes.empty());
  EXPECT_TRUE(read_input_file(temp_file("edge.txt", std::string(100, 'x')), 100, "t").ok());
}

// A /proc file reports size 0 and is as long as it is: the limit holds while reading too.
TEST(InputFile, TheLimitHoldsForFilesThatUnderstateTheirSize) {
  const InputFile whole = read_input_file("/proc/self/status", 1 << 20, "status");
  ASSERT_TRUE(whole.ok()) << whole.error;
  EXPECT_NE(whole.bytes.find("VmRSS"), std::string::npos);
  const InputFile cut = read_input_file("/proc/self/status", 16, "status");
  EXPECT_FALSE(cut.ok());
  EXPECT_NE(cut.error.find("larger than"), std::string::npos) << cut.error;
}

}  // namespace
}  // namespace cs
