// `vkformer generate` and `vkformer score`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "options.hpp"
#include "vkformer/model.hpp"

namespace vkf::cli {

namespace {

std::vector<uint32_t> parse_ids(const std::string& text, const char* what) {
  std::vector<uint32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v > 0xffffffffull)
      throw Error(std::string(what) + ": '" + item + "' is not a token id");
    ids.push_back(uint32_t(v));
  }
  if (ids.empty()) throw Error(std::string(what) + " is empty");
  return ids;
}

uint32_t parse_count(const std::optional<std::string>& v, uint32_t fallback, const char* what) {
  if (!v) return fallback;
  try {
    size_t used = 0;
    long n = std::stol(*v, &used);
    if (used == v->size() && n >= 0 && n < (1l << 30)) return uint32_t(n);
  } catch (...) {
  }
  throw Error(std::string(what) + " must be a non-negative integer, got '" + *v + "'");
}

struct ModelArgs {
  std::string dir;
  DType precision = DType::F32;
  bool profile = false;
};

ModelArgs model_args(Args& args) {
  ModelArgs m;
  auto dir = args.value("--model");
  if (!dir) throw Error("--model DIR is required");
  m.dir = *dir;
  const std::string p = args.value("--precision").value_or("fp32");
  if (p == "fp16") m.precision = DType::F16;
  else if (p != "fp32") throw Error("--precision must be fp32 or fp16");
  m.profile = args.flag("--profile");
  return m;
}

void write_npy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                       std::to_string(cols) + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write " + path);
  const uint16_t len = uint16_t(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f << header;
  f.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size() * 4));
  if (!f) throw Error("cannot write " + path);
}

}  // namespace

int generate(Args& args) {
  ModelArgs ma = model_args(args);
  const bool json = args.flag("--json");
  const bool warmup = args.flag("--warmup");
  auto src = args.value("--src-ids");
  if (!src) throw Error("--src-ids 5,17,9 is required (several sources: separate them with ';')");
  GenerateOptions o;
  const auto max_new = args.value("--max-new-tokens");
  o.max_new_tokens = parse_count(max_new, 64, "--max-new-tokens");
  o.beam = parse_count(args.value("--beam"), 1, "--beam");
  if (auto t = args.value("--temperature")) o.temperature = std::stof(*t);
  o.top_k = parse_count(args.value("--top-k"), 0, "--top-k");
  if (auto p = args.value("--top-p")) o.top_p = std::stof(*p);
  o.seed = parse_count(args.value("--seed"), 0, "--seed");
  if (auto b = args.value("--submit-budget-ms")) {
    o.submit_budget_ms = std::stof(*b);
    if (!(o.submit_budget_ms >= 0)) throw Error("--submit-budget-ms must be a number of milliseconds >= 0 (0: no budget)");
  }
  o.max_steps_per_submit = parse_count(args.value("--max-steps-per-submit"), 64, "--max-steps-per-submit");
  if (o.max_steps_per_submit == 0) throw Error("--max-steps-per-submit must be at least 1");
  ContextOptions co = context_options(args);
  args.rest();
  std::vector<std::vector<uint32_t>> sources;
  std::stringstream ss(*src);
  std::string one;
  while (std::getline(ss, one, ';')) sources.push_back(parse_ids(one, "--src-ids"));

  Context ctx(co);
  auto t0 = std::chrono::steady_clock::now();
  auto model = Model::load(ctx, ma.dir, ma.precision);
  if (!max_new) o.max_new_tokens = std::min(o.max_new_tokens, model->config().max_position);
  auto t1 = std::chrono::steady_clock::now();
  Session session(model);
  session.set_profile(ma.profile);
  if (warmup) {  // compiles every pipeline, fills the caches: what follows times decoding alone
    session.generate(sources, o);
    t1 = std::chrono::steady_clock::now();
  }
  auto out = session.generate(sources, o);
  auto t2 = std::chrono::steady_clock::now();
  size_t tokens = 0;
  for (auto& ids : out) tokens += ids.size();
  const double secs = std::chrono::duration<double>(t2 - t1).count();
  if (json) {
    nlohmann::json j;
    j["ids"] = out.size() == 1 ? nlohmann::json(out[0]) : nlohmann::json(out);
    j["device"] = ctx.capabilities().name;
    j["seconds"] = secs;
    j["tokens_per_second"] = tokens / secs;  // encode and decode together
    const GenerateStats& st = session.last_stats();
    j["encode_ms"] = st.encode_ms;
    j["decode_ms"] = st.decode_ms;
    j["decode_tokens_per_second"] = st.decode_tokens_per_second();
    j["counters"] = {{"submits_per_token", st.submits_per_token()},
                     {"recordings_per_token", st.recordings_per_token()},
                     {"dispatches_per_decoder_layer", st.dispatches_per_decoder_layer}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (auto& ids : out) {
      std::string line;
      for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
      std::printf("%s\n", line.c_str());
    }
    std::fprintf(stderr, "vkformer: %zu tokens in %.3f s (%.1f tokens/s) on %s; model loaded in %.3f s\n", tokens, secs,
                 tokens / secs, ctx.capabilities().name.c_str(), std::chrono::duration<double>(t1 - t0).count());
  }
  if (ma.profile) {
    const GenerateStats& st = session.last_stats();
    std::fprintf(stderr,
                 "encode %.3f ms, decode %.3f ms (%.1f tokens/s); per token: %.3f submits, %.3f recordings; "
                 "%.1f dispatches per decoder layer\n%s",
                 st.encode_ms, st.decode_ms, st.decode_tokens_per_second(), st.submits_per_token(),
                 st.recordings_per_token(), st.dispatches_per_decoder_layer, session.profile_report().c_str());
  }
  return 0;
}

int score(Args& args) {
  ModelArgs ma = model_args(args);
  auto src = args.value("--src-ids"), tgt = args.value("--tgt-ids"), out = args.value("--logits-out");
  if (!src || !tgt || !out) throw Error("score needs --src-ids, --tgt-ids and --logits-out FILE.npy");
  ContextOptions co = context_options(args);
  args.rest();
  auto s = parse_ids(*src, "--src-ids"), t = parse_ids(*tgt, "--tgt-ids");
  Context ctx(co);
  auto model = Model::load(ctx, ma.dir, ma.precision);
  Session session(model);
  session.set_profile(ma.profile);
  auto logits = session.score(s, t);
  write_npy(*out, logits, t.size(), model->config().tgt_vocab_size);
  if (ma.profile) std::fprintf(stderr, "%s", session.profile_report().c_str());
  return 0;
}

}  // namespace vkf::cli
