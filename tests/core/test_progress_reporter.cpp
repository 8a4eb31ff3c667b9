#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/progress_reporter.hpp"

using agentq::ProgressReporter;
using json = nlohmann::json;

TEST(ProgressReporter, NothingWithoutAToken) {
  ProgressReporter none;
  EXPECT_FALSE(none.following());
  EXPECT_EQ(none.output("printed"), "");
  EXPECT_EQ(none.tick(), "");
}

TEST(ProgressReporter, OutputAsNotificationsCounted) {
  ProgressReporter reporter("t1");
  json first = json::parse(reporter.output("0 \n"));
  EXPECT_EQ(first["method"], "notifications/progress");
  EXPECT_FALSE(first.contains("id"));
  EXPECT_EQ(first["params"]["progressToken"], "t1");
  EXPECT_EQ(first["params"]["progress"], 1);
  EXPECT_EQ(first["params"]["message"], "0 \n");
  json second = json::parse(reporter.output("1 \n"));
  EXPECT_EQ(second["params"]["progress"], 2);
  // Just sent: no tick yet.
  EXPECT_EQ(reporter.tick(), "");
}

TEST(ProgressReporter, OutputBoundedAtWholeCharacters) {
  ProgressReporter reporter(7);
  std::string text(ProgressReporter::kMostOutput - 1, 'x');
  text += "é and more";  // its first byte would fit, not the second
  json cut = json::parse(reporter.output(text));
  EXPECT_EQ(cut["params"]["message"].get<std::string>().size(), ProgressReporter::kMostOutput - 1);
  // One byte is left: one more character, then nothing.
  EXPECT_EQ(json::parse(reporter.output("more"))["params"]["message"], "m");
  EXPECT_EQ(reporter.output("more"), "");
}
