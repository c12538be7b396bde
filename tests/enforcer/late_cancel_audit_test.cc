// The audit record of a run that a cancel reached after its command ended
// (Outcome::cancelled_after_end): an Outcome through the same glue the CLI
// uses (audit/outcome_events.h) into a signed log, verified.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "audit/outcome_events.h"
#include "enforcer/outcome.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

using LateCancelAuditTest = AuditTempDir;

// A cancel that came after the command had ended made cocoon exit 130, but
// the audit log's record of the run said nothing of it. The Process exited
// event, the run's last, now carries it as cocoon.exit.cancelled_after_end,
// signed with the rest of the line, and the log verifies intact and sealed.
// Seen failing before the field was carried (no such key).
TEST_F(LateCancelAuditTest, ALateCancelIsInTheRunsSignedExitEvent) {
  enforcer::Outcome outcome;
  outcome.termination_reason = enforcer::TerminationReason::kExited;
  outcome.exit_code = 0;
  outcome.policy_name = "p";
  outcome.cancelled_after_end =
      "SIGTERM came after the command had ended, while cocoon finished the run (its verification and Outcome): it "
      "stopped nothing, and the run stands as reported";
  auto log = AuditLog::Open(Options("log"));
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_TRUE((*log)->AppendBatch(EventsFromOutcome(outcome, 77, "run-1")).ok());
  ASSERT_TRUE((*log)->Close().ok());
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  json exited;
  for (const auto& line : SplitLines(ReadFile(Path("log")))) {
    json j = json::parse(line);
    if (j.value("/event/action"_json_pointer, "") == "process-exited") exited = j;
  }
  ASSERT_TRUE(exited.is_object()) << "no Process exited event in the log";
  EXPECT_EQ(exited["cocoon"]["exit"].value("cancelled_after_end", ""), outcome.cancelled_after_end) << exited.dump(2);
  // Without a late cancel, no key.
  enforcer::Outcome quiet;
  EXPECT_FALSE(EventFields(EventsFromOutcome(quiet, 77, "run-2").back())["cocoon"]["exit"].contains("cancelled_after_end"));
}

}  // namespace
}  // namespace cocoon::audit::testing
