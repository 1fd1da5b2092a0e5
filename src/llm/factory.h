// The provider a lathe.toml describes (llm/config.h): openai, anthropic or command, wrapped in
// a cassette recorder, or replaced by a cassette player, as the file's cassette mode says.
#pragma once

#include <memory>

#include "core/error.h"
#include "llm/config.h"
#include "llm/provider.h"

namespace lathe::llm {

result<std::unique_ptr<provider>> make_provider(const config& cfg);

}  // namespace lathe::llm
