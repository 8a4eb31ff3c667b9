// The answer channel's FIFO (sys/answer_fifo): what Emacs agrees to open,
// whoever names it, and how an answer is written.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/temp_dir.hpp"
#include "sys/answer_fifo.hpp"

namespace {

using agentq::fixtures::TempDir;

std::string refusal(const std::string& path) {
  std::string why;
  int fd = agentq::open_answer_fifo(path, why);
  if (fd >= 0) {
    ::close(fd);
    return "opened";
  }
  return why;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(AnswerFifo, OnlyAPrivateFifoOfTheUsersOwnWithAReaderIsOpened) {
  TempDir dir;
  const std::string fifo = dir.path + "/answers";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(contains(refusal(fifo), "has no reader")) << refusal(fifo);  // and it did not block
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  EXPECT_EQ(refusal(fifo), "opened");

  // A symbolic link to it, even to this very FIFO.
  const std::string link = dir.path + "/link";
  ASSERT_EQ(::symlink(fifo.c_str(), link.c_str()), 0);
  EXPECT_TRUE(contains(refusal(link), "symbolic link")) << refusal(link);

  // Others may open it.
  const std::string open_fifo = dir.path + "/open";
  ASSERT_EQ(::mkfifo(open_fifo.c_str(), 0600), 0);
  ASSERT_EQ(::chmod(open_fifo.c_str(), 0622), 0);
  int open_reader = ::open(open_fifo.c_str(), O_RDONLY | O_NONBLOCK);
  EXPECT_TRUE(contains(refusal(open_fifo), "other users (mode 622)")) << refusal(open_fifo);

  // A file: refused, and untouched.
  const std::string file = dir.path + "/notes.txt";
  std::ofstream(file) << "keep me";
  ::chmod(file.c_str(), 0600);
  EXPECT_TRUE(contains(refusal(file), "is not a FIFO")) << refusal(file);
  std::ifstream in(file);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "keep me");

  // A device, a directory, nothing at all.
  EXPECT_TRUE(contains(refusal("/dev/null"), "is not a FIFO"));
  EXPECT_TRUE(contains(refusal(dir.path), "is not a FIFO"));
  EXPECT_TRUE(contains(refusal(dir.path + "/missing"), "cannot be read"));
  ::close(reader);
  if (open_reader >= 0) ::close(open_reader);
}

TEST(AnswerFifo, AnAnswerIsOneWholeLineOrNothing) {
  TempDir dir;
  const std::string fifo = dir.path + "/answers";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  std::string why;
  int writer = agentq::open_answer_fifo(fifo, why);
  ASSERT_GE(writer, 0) << why;

  EXPECT_TRUE(agentq::write_answer_line(writer, R"({"id":1})"));
  char buffer[agentq::kAnswerFifoAtomicBytes * 2];
  ASSERT_EQ(::read(reader, buffer, sizeof buffer), 9);
  EXPECT_EQ(std::string(buffer, 9), "{\"id\":1}\n");
  // Too long for one atomic write: not written at all (Emacs sends it).
  EXPECT_FALSE(agentq::write_answer_line(writer, std::string(agentq::kAnswerFifoAtomicBytes, 'x')));
  EXPECT_TRUE(agentq::write_answer_line(writer, std::string(agentq::kAnswerFifoAtomicBytes - 1, 'y')));
  EXPECT_EQ(::read(reader, buffer, sizeof buffer), static_cast<ssize_t>(agentq::kAnswerFifoAtomicBytes));

  // The reader gone: false, and no SIGPIPE (which would end this test) is
  // left pending.
  ::close(reader);
  EXPECT_FALSE(agentq::write_answer_line(writer, R"({"id":2})"));
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGPIPE), 0);
  ::close(writer);
}
