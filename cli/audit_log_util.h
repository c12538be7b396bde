// The signed audit log as cocoon-full's commands open it: required (an
// unwritable log refuses what it would record), from --audit-log/--audit-key.
// Used by launches (launch_dynamic_util.cc) and by the MCP server's events
// for calls that start no sandbox (mcp_command.cc). cocoon-full only: the
// launcher hands audited work over to it (cli/launch_dynamic.h).
#pragma once

#include <memory>

#include "audit/audit_log.h"
#include "cli/launch_util.h"
#include "compiler/common/status.h"

namespace cocoon::cli {

Result<std::unique_ptr<audit::AuditLog>> OpenRequiredAuditLog(const AuditOptions& options);

}  // namespace cocoon::cli
