// Building SDDL ACE strings ("(D;OICI;FW;;;S-1-15-3-...)") for windows.json.
// Only typed values go in: an ACE type, inheritance flags, rights and a SID
// that was validated; no path or other policy string can reach an SDDL text.
// Format: https://learn.microsoft.com/windows/win32/secauthz/ace-strings
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::backends::windows {

enum class AceType { kAllow, kDeny, kMandatoryLabel };

// File rights used by the back end, as SDDL right codes.
inline constexpr std::string_view kRightsAll = "FA";            // FILE_ALL_ACCESS
inline constexpr std::string_view kRightsWrite = "FW";          // FILE_GENERIC_WRITE
inline constexpr std::string_view kRightsDelete = "SDDT";       // DELETE + FILE_DELETE_CHILD (0x40)
inline constexpr std::string_view kRightsReadExecute = "FRFX";  // FILE_GENERIC_READ|EXECUTE
inline constexpr std::string_view kRightsModify = "FRFWFXSD";   // read, write, execute, delete; no WRITE_DAC/OWNER
inline constexpr std::string_view kRightsChangeAcl = "WDWO";    // WRITE_DAC + WRITE_OWNER

// S-1-<revision>-<authority>(-<subauthority>)+ with decimal parts, or a
// two-letter SDDL alias such as "LW" (low integrity) or "ME" (medium).
bool IsValidSid(std::string_view sid);

// "(D;OICI;FW;;;SID)". Object and container inherit: the rule covers the
// directory and everything created below it later.
Result<std::string> Ace(AceType type, std::string_view rights, std::string_view sid);

}  // namespace cocoon::backends::windows
