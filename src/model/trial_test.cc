#include "model/trial.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace cohort {
namespace {

TEST(TrialTest, EnvNameIsUpperCaseWithDotsAsUnderscores) {
  EXPECT_EQ(HParamEnvName("lr"), "COHORT_HP_LR");
  EXPECT_EQ(HParamEnvName("model.hidden_size"), "COHORT_HP_MODEL_HIDDEN_SIZE");
  EXPECT_EQ(HParamEnvName("Model.Depth2"), "COHORT_HP_MODEL_DEPTH2");
}

TEST(TrialTest, FlattenGivesEveryLeafByItsDottedNameAsText) {
  nlohmann::json hparams = nlohmann::json::parse(R"({
    "lr": 0.001, "epochs": 27, "optimizer": "adam", "nesterov": true, "nothing": null,
    "model": {"hidden": 64, "head": {"dropout": 0.25}}, "big": 1e22, "tiny": 1e-05,
    "whole": 3.0
  })");
  std::map<std::string, std::string> want = {
      {"big", "1e+22"},       {"epochs", "27"},
      {"lr", "0.001"},        {"model.head.dropout", "0.25"},
      {"model.hidden", "64"}, {"nesterov", "true"},
      {"nothing", "null"},    {"optimizer", "adam"},
      {"tiny", "1e-05"},      {"whole", "3"},
  };
  EXPECT_EQ(FlattenHParams(hparams), want);
  EXPECT_TRUE(FlattenHParams(nlohmann::json::object()).empty());
  EXPECT_TRUE(FlattenHParams(nlohmann::json(3)).empty());
}

TEST(TrialTest, NumbersAreTheShortestTextThatReadsBack) {
  for (double v : {0.1, 1.0 / 3.0, 2.5e-7, 123456.789, -0.0001}) {
    std::string text = FlattenHParams(nlohmann::json{{"x", v}}).at("x");
    EXPECT_EQ(std::stod(text), v) << text;
  }
  EXPECT_EQ(FlattenHParams(nlohmann::json{{"x", 0.1}}).at("x"), "0.1");
}

TEST(TrialTest, EnvironmentHasSweepTrialAndEachValue) {
  TrialRef trial{
      .sweep = 12, .trial = 3, .hparams = nlohmann::json{{"lr", 0.01}, {"model", {{"depth", 4}}}}};
  std::map<std::string, std::string> want = {{"COHORT_SWEEP_ID", "12"},
                                             {"COHORT_TRIAL_ID", "3"},
                                             {"COHORT_HP_LR", "0.01"},
                                             {"COHORT_HP_MODEL_DEPTH", "4"}};
  EXPECT_EQ(TrialEnvironment(trial), want);
}

}  // namespace
}  // namespace cohort
