// libFuzzer entry: arbitrary bytes -> full check (loader, checker, IR,
// explain). Imports resolve against the shipped policies/ directory, so the
// fuzzer exercises inheritance from strict too.
#include <cstdint>
#include <string>

#include "compiler/frontend/frontend.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  cocoon::frontend::FrontendOptions options;
  options.dfa_reuse = cocoon::frontend::DfaReuse::kProcessWide;  // a cold DFA per input cut exec/s ~6x
  options.max_file_bytes = 1 << 20;
  cocoon::Diagnostics diagnostics(options.diagnostics);
  auto policy = cocoon::frontend::CompilePolicyText("fuzz.cocoon", text, "", options, diagnostics);
  if (policy) (void)cocoon::frontend::ExplainPolicy(*policy);
  (void)diagnostics.Render();
  (void)diagnostics.RenderJson();
  return 0;
}
