#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "args.hpp"
#include "npy.hpp"  // write_npy: every command that writes arrays
#include "vkformer/context.hpp"
#include "vkformer/model.hpp"
#include "vkformer/ops.hpp"

namespace vkf::cli {

int model_info(const std::string& dir, bool json, const ContextOptions& options, const LoadOptions& load);  // info --model
int gguf_info(const std::string& path, bool json);  // info --model FILE.gguf
int info(const Args& args);
int selftest(const Args& args);
int bench(const Args& args);
int generate(const Args& args);
int score(const Args& args);
int translate(const Args& args);
int forecast(const Args& args);
int tune(const Args& args);
int tokenize(const Args& args);
int help_command(const Args& args);
int version_command(const Args& args);

int encode(const Args& args);
int embed(const Args& args);
int search(const Args& args);


// Comma-separated token ids ("5,17,9"): each a whole number; `what` names the option.
std::vector<uint32_t> parse_ids(const std::string& text, const char* what);

}  // namespace vkf::cli
