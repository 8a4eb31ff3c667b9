#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/registry.hpp"
#include "test_helpers.hpp"

using namespace agentq;
using agentq::testing::make_tool;
using agentq::testing::param;
using agentq::testing::returns;

namespace {

std::vector<std::string> names_of(const std::vector<ToolPtr>& tools) {
  std::vector<std::string> out;
  for (const auto& t : tools) out.push_back(t->name);
  return out;
}

// The contract's mix: safe introspection, cautious execution, dangerous buffer tools.
void fill_sample(Registry& r) {
  r.register_tool(make_tool("describe_symbol", {param("symbol")}, {"symbol"}, SafetyLevel::Safe, returns("d"),
                            {"introspection"}));
  r.register_tool(make_tool("who_calls", {param("function")}, {"function"}, SafetyLevel::Safe, returns("w"),
                            {"introspection", "xref"}));
  r.register_tool(make_tool("eval_form", {param("form")}, {"form"}, SafetyLevel::Cautious, returns("e"),
                            {"execution"}));
  r.register_tool(make_tool("read_file", {param("path")}, {"path"}, SafetyLevel::Safe, returns("r"), {"buffer"}));
  r.register_tool(make_tool("write_file", {param("path"), param("content")}, {"path", "content"},
                            SafetyLevel::Dangerous, returns("wf"), {"buffer", "filesystem"}));
  r.register_tool(make_tool("propose_file_edit", {param("path")}, {"path"}, SafetyLevel::Dangerous, returns("p"),
                            {"diff"}));
}

}  // namespace

TEST(Registry, StartsEmpty) {
  Registry r;
  EXPECT_EQ(r.size(), 0u);
  EXPECT_TRUE(r.names().empty());
  EXPECT_TRUE(r.filter().empty());
  EXPECT_EQ(r.get("anything"), nullptr);
}

TEST(Registry, RegisterThenGet) {
  Registry r;
  ToolPtr stored = r.register_tool(make_tool("describe_symbol", {param("symbol")}, {"symbol"}));
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->name, "describe_symbol");
  EXPECT_EQ(r.get("describe_symbol"), stored);
  EXPECT_EQ(r.size(), 1u);
}

TEST(Registry, GetUnknownIsNull) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(r.get("nonexistent"), nullptr);
  EXPECT_EQ(r.get(""), nullptr);
  EXPECT_EQ(r.get("Describe_Symbol"), nullptr);
}

TEST(Registry, GetIsExactAndDoesNotReadHyphens) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(r.get("describe-symbol"), nullptr);
  EXPECT_NE(r.get("describe_symbol"), nullptr);
}

TEST(Registry, RegisterOverwritesSameName) {
  Registry r;
  Tool first = make_tool("t");
  first.description = "first version";
  Tool second = make_tool("t");
  second.description = "second version";
  ToolPtr a = r.register_tool(first);
  ToolPtr b = r.register_tool(second);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.get("t")->description, "second version");
  EXPECT_EQ(r.get("t"), b);
  // A caller still holding the old definition keeps a valid object.
  EXPECT_EQ(a->description, "first version");
}

TEST(Registry, RegisteringTheSameToolTwiceIsIdempotent) {
  Registry r;
  Tool t = make_tool("t", {param("x")}, {"x"});
  r.register_tool(t);
  r.register_tool(t);
  EXPECT_EQ(r.size(), 1u);
  EXPECT_EQ(r.names(), std::vector<std::string>{"t"});
}

TEST(Registry, RejectsInvalidDefinitionWithoutStoringIt) {
  Registry r;
  EXPECT_THROW(r.register_tool(make_tool("Foo-Bar")), ToolDefinitionError);
  EXPECT_THROW(r.register_tool(make_tool("t", {param("a")}, {"b"})), ToolDefinitionError);
  Tool no_handler = make_tool("t");
  no_handler.handler = nullptr;
  EXPECT_THROW(r.register_tool(no_handler), ToolDefinitionError);
  EXPECT_EQ(r.size(), 0u);
}

TEST(Registry, InvalidRedefinitionKeepsThePreviousTool) {
  Registry r;
  ToolPtr good = r.register_tool(make_tool("t", {param("a")}, {"a"}));
  EXPECT_THROW(r.register_tool(make_tool("t", {param("a")}, {"zzz"})), ToolDefinitionError);
  EXPECT_EQ(r.get("t"), good);
}

TEST(Registry, RegisterErrorMessageNamesTheProblem) {
  Registry r;
  try {
    r.register_tool(make_tool("describe_symbol", {param("symbol")}, {"x"}));
    FAIL() << "expected ToolDefinitionError";
  } catch (const ToolDefinitionError& e) {
    EXPECT_STREQ(e.what(), "Tool describe_symbol: required parameter \"x\" is not among its parameters");
  }
}

TEST(Registry, NamesAreSorted) {
  Registry r;
  for (const char* n : {"zeta", "alpha", "mid_point", "beta", "alpha2"}) r.register_tool(make_tool(n));
  EXPECT_EQ(r.names(), (std::vector<std::string>{"alpha", "alpha2", "beta", "mid_point", "zeta"}));
}

TEST(Registry, FilterWithoutCriteriaGivesAllSorted) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(names_of(r.filter()), (std::vector<std::string>{"describe_symbol", "eval_form", "propose_file_edit",
                                                             "read_file", "who_calls", "write_file"}));
}

TEST(Registry, FilterByMaxSafetyLevel) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(names_of(r.filter(SafetyLevel::Safe)),
            (std::vector<std::string>{"describe_symbol", "read_file", "who_calls"}));
  EXPECT_EQ(names_of(r.filter(SafetyLevel::Cautious)),
            (std::vector<std::string>{"describe_symbol", "eval_form", "read_file", "who_calls"}));
  EXPECT_EQ(r.filter(SafetyLevel::Dangerous).size(), 6u);
}

TEST(Registry, FilterByCategoriesNeedsAtLeastOneMatch) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(names_of(r.filter(std::nullopt, {"xref"})), (std::vector<std::string>{"who_calls"}));
  EXPECT_EQ(names_of(r.filter(std::nullopt, {"introspection"})),
            (std::vector<std::string>{"describe_symbol", "who_calls"}));
  EXPECT_EQ(names_of(r.filter(std::nullopt, {"execution", "diff"})),
            (std::vector<std::string>{"eval_form", "propose_file_edit"}));
  EXPECT_TRUE(r.filter(std::nullopt, {"clos"}).empty());
}

TEST(Registry, FilterCategoriesAcceptKeywordSpelling) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(names_of(r.filter(std::nullopt, {":xref"})), (std::vector<std::string>{"who_calls"}));
  EXPECT_EQ(names_of(r.filter(std::nullopt, {"XREF"})), (std::vector<std::string>{"who_calls"}));
}

TEST(Registry, FilterCombinesLevelAndCategoriesWithAnd) {
  Registry r;
  fill_sample(r);
  EXPECT_EQ(names_of(r.filter(SafetyLevel::Safe, {"buffer"})), (std::vector<std::string>{"read_file"}));
  EXPECT_EQ(names_of(r.filter(SafetyLevel::Dangerous, {"buffer"})),
            (std::vector<std::string>{"read_file", "write_file"}));
  EXPECT_TRUE(r.filter(SafetyLevel::Cautious, {"diff"}).empty());
  EXPECT_EQ(names_of(r.filter(SafetyLevel::Safe, {"introspection", "execution"})),
            (std::vector<std::string>{"describe_symbol", "who_calls"}));
}

TEST(Registry, ResolveExactName) {
  Registry r;
  ToolPtr t = r.register_tool(make_tool("evaluate_lisp", {param("code")}, {"code"}));
  EXPECT_EQ(r.resolve("evaluate_lisp"), t);
}

TEST(Registry, ResolveAcceptsHyphenatedAlias) {
  Registry r;
  ToolPtr t = r.register_tool(make_tool("evaluate_lisp", {param("code")}, {"code"}));
  ToolPtr u = r.register_tool(make_tool("list_package_symbols"));
  EXPECT_EQ(r.resolve("evaluate-lisp"), t);
  EXPECT_EQ(r.resolve("list-package-symbols"), u);
  EXPECT_EQ(r.resolve("list-package_symbols"), u);
}

TEST(Registry, ResolveUnknownIsNull) {
  Registry r;
  r.register_tool(make_tool("evaluate_lisp"));
  EXPECT_EQ(r.resolve("evaluate-lisp-now"), nullptr);
  EXPECT_EQ(r.resolve("Evaluate-Lisp"), nullptr);
  EXPECT_EQ(r.resolve(""), nullptr);
  EXPECT_EQ(r.resolve("-"), nullptr);
}

TEST(Registry, FilterReturnsSharedDefinitions) {
  Registry r;
  fill_sample(r);
  auto tools = r.filter(SafetyLevel::Safe, {"introspection"});
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0], r.get("describe_symbol"));
}

TEST(Registry, ConcurrentRegistrationAndLookup) {
  Registry r;
  r.register_tool(make_tool("shared_tool"));
  std::atomic<bool> stop{false};
  std::atomic<int> lookups{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        ToolPtr t = r.resolve("shared-tool");
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(t->name, "shared_tool");
        (void)r.names();
        (void)r.filter(SafetyLevel::Cautious);
        lookups.fetch_add(1);
      }
    });
  }
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 300; ++i) {
        r.register_tool(make_tool("tool_" + std::to_string(w) + "_" + std::to_string(i)));
        r.register_tool(make_tool("shared_tool"));
      }
    });
  }
  for (auto& t : writers) t.join();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(r.size(), 601u);
  EXPECT_GT(lookups.load(), 0);
  auto names = r.names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(RegistryGeneration, ChangesWithEveryRegistration) {
  agentq::Registry registry;
  const auto first = registry.generation();
  registry.register_tool(agentq::testing::make_tool("one"));
  const auto second = registry.generation();
  EXPECT_NE(first, second);
  registry.register_tool(agentq::testing::make_tool("one"));  // a replacement changes it too
  EXPECT_NE(second, registry.generation());
  EXPECT_THROW(registry.register_tool(agentq::testing::make_tool("Bad Name")), agentq::ToolDefinitionError);
  EXPECT_EQ(registry.size(), 1u);
}
