// Every command and its options: the one table the parser (args.cpp) and --help read.
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

#include "args.hpp"
#include "vkformer/context.hpp"
#include "vkformer/model.hpp"
#include "vkformer/vkformer.h"

namespace vkf::cli {

namespace {

using K = OptionKind;

// Options several commands share, spelled once so that their ranges agree.
const OptionSpec kJson{"--json", nullptr, K::Switch, "one JSON object (schema: docs/cli.md)"};
const OptionSpec kPrecision{"--precision", "fp32|fp16", K::Text, "storage precision of weights and activations (default fp32)"};
const OptionSpec kWeights{"--weights", "q8_0|q6_k|q5_k|q5_1|q5_0|q4_k|q4_1|q4_0|q4_k_m|q5_k_m", K::Text,
                          "the linear layers' weights in llama.cpp's blocks, quantized at load\n"
                          "(q4_k_m, q5_k_m: llama.cpp's mixes, for decoder-only models; --precision\n"
                          "stays the activations'; default: weights in --precision)"};
const OptionSpec kProfile{"--profile", nullptr, K::Switch, "per-dispatch GPU times and counters on stderr"};
const OptionSpec kMaxNewTokens{"--max-new-tokens", "N", K::Integer, "at most N tokens per output", 1, 1 << 16};
const OptionSpec kBeam{"--beam", "K", K::Integer, "beam search of width K (1: greedy)", 1, GenerateOptions::kMaxBeam};
// The families as the registry lists them, in lines of at most ~76 characters.
const char* model_help() {
  static const std::string text = [] {
    std::string out = "a model directory (config.json, model.safetensors, as save_pretrained\nwrites a Hugging Face one):";
    size_t line = out.size() - out.rfind('\n') - 1;
    std::string word;
    std::istringstream words(supported_model_families());
    while (words >> word) {
      if (line + 1 + word.size() > 76) out += "\n", line = 0;
      else out += " ", ++line;
      out += word, line += word.size();
    }
    out += ";\nor a GGUF file (llama.cpp's format: llama, qwen2, gpt2)";
    return out;
  }();
  return text.c_str();
}
const OptionSpec kModel{"--model", "DIR", K::Text, model_help()};

}  // namespace

const std::vector<OptionSpec>& common_options() {
  static const std::vector<OptionSpec> options = {
      {"--device", "N|NAME", K::Text, "device by index or name substring (also VKF_DEVICE)"},
      {"--validation", nullptr, K::Switch, "enable the Khronos validation layer (also VKF_VALIDATION=1)"},
      {"--no-cache", nullptr, K::Switch, "do not read or write the shader and pipeline caches"},
      {"--help", nullptr, K::Switch, "this text (also -h)"},
  };
  return options;
}

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> table = {
      {"info", "every Vulkan device, its capabilities and what vkformer uses", "usage: vkformer info [--model DIR] [--json]",
       "Lists every Vulkan device with its limits, memory, the optional features vkformer\n"
       "uses there and any driver quirk; the default device is marked with '*'.",
       {{"--model", "DIR", K::Text,
         "instead: what vkformer reads from a model directory (architecture, sizes,\n"
         "heads, positions, parameters, the checkpoint's storage, tokenizer,\n"
         "generation defaults), loaded on the chosen device"},
        {"--precision", "fp32|fp16", K::Text, "with --model: the precision to load it in (default fp32)"},
        {"--weights", "q8_0|q6_k|q5_k|q5_1|q5_0|q4_k|q4_1|q4_0|q4_k_m|q5_k_m", K::Text,
         "with --model: its linear layers' weights in these blocks (their bytes listed)"},
        kJson}},
      {"help", "this overview, or one command's options", "usage: vkformer help [COMMAND]",
       "Prints the list of commands, or with COMMAND its usage and options (as\n"
       "`vkformer COMMAND --help`).",
       {}, "COMMAND"},
      {"version", "vkformer's version and its C ABI version", "usage: vkformer version [--json]",
       "Prints vkformer's version and the C API's ABI version (VKF_ABI_VERSION in\n"
       "vkformer.h; docs/c-api.md says what each changed).",
       {kJson}},
      {"tokenize", "text to token ids, or ids to text, with a model's tokenizer",
       "usage: vkformer tokenize --model DIR [--json] [--] \"text\" ...\n"
       "       vkformer tokenize --model DIR --ids 5,17,9 [--json]",
       "Prints each text's ids as `generate` takes them (a BART source with <s> and </s>, a\n"
       "Llama prompt with its BOS: as transformers encodes it), one comma-separated line per\n"
       "text; or with --ids, their text (special tokens left out, as transformers' decode\n"
       "with skip_special_tokens). Reads the tokenizer's files only: no device is opened.",
       {kModel,
        {"--ids", "IDS", K::Text, "comma-separated ids to turn into text instead"},
        {"--json", nullptr, K::Switch, "one JSON object: the tokenizer, and each text with its ids (schema: docs/cli.md)"}},
       "TEXT"},
      {"selftest", "compile a shader, run it on the chosen device, check the answer", "usage: vkformer selftest [--json]",
       "Compiles a small kernel, runs it on the chosen device and checks every element\n"
       "against the CPU. Exit status 0 only when it matches and the validation layer (when\n"
       "on) reported nothing.",
       {kJson}},
      {"generate", "target token ids from source token ids, or a prompt's continuation (greedy, beam or sampling)",
       "usage: vkformer generate --model DIR --src-ids 5,17,9[;4,2...] [options]   (encoder-decoders)\n"
       "       vkformer generate --model DIR --ids 5,17,9[;4,2...] [options]       (decoder-only)\n"
       "       vkformer generate --model DIR --prompt \"text\" [options]             (decoder-only, with a tokenizer)",
       "Prints the generated target ids after BOS, one line per source (EOS included when\n"
       "produced); a decoder-only model's new ids after each prompt, the prompt's ids used\n"
       "exactly as given (no BOS added). A warning on stderr names any output cut at\n"
       "--max-new-tokens. A Hugging Face model's generation_config.json gives the defaults, as\n"
       "`translate` takes them; options override them. Sampling options need --temperature\n"
       "(or the model's do_sample), which does not combine with --beam above 1. Beam search and\n"
       "transformers' processors run as its generate() runs them (docs/models.md, \"Generation\").",
       {kModel,
        {"--src-ids", "IDS", K::Text, "an encoder-decoder's comma-separated source ids; several separated by ';'"},
        {"--ids", "IDS", K::Text, "a decoder-only model's comma-separated prompt ids; several separated by ';'"},
        {"--prompt", "TEXT", K::Text, "a decoder-only model's prompt as text (its tokenizer): the continuation\n"
                                      "is printed as it is generated, tokens/s on stderr at the end"},
        kMaxNewTokens,
        kBeam,
        {"--length-penalty", "A", K::Number, "beam: score / length^A (default 1)", -10, 10},
        {"--temperature", "T", K::Number, "> 0: sample at temperature T (default 0: greedy or beam)", 0,
         GenerateOptions::kMaxTemperature},
        {"--top-k", "K", K::Integer, "sampling: keep the K most likely tokens (0: all)", 0, 1 << 24},
        {"--top-p", "P", K::Number, "sampling: keep the smallest set with probability P", 1e-9, 1},
        {"--eos-ids", "IDS", K::Text, "more token ids that end an output, as the model's EOS does (comma-separated)"},
        {"--stop", "TEXT", K::Text, "a decoder-only model with a tokenizer: end an output once its text holds TEXT"},
        {"--repetition-penalty", "R", K::Number,
         "transformers' repetition penalty: logits of tokens already in the output (and a\n"
         "decoder-only model's prompt) divided by R when positive, times R when negative (1: none)",
         1e-6, GenerateOptions::kMaxRepetitionPenalty},
        {"--seed", "S", K::Integer,
         "sampling seed (default: a fresh one each run, printed on stderr and in\n"
         "--json as \"seed\"); one seed always draws the same tokens",
         0, 18446744073709551615.0},
        {"--num-return-sequences", "N", K::Integer, "beam: the N best outputs of each input, best first, one line each", 1,
         GenerateOptions::kMaxBeam},
        {"--early-stopping", "WHEN", K::Text, "beam: true, false or never, as transformers' early_stopping"},
        {"--no-repeat-ngram-size", "N", K::Integer, "a Hugging Face model: no N-gram appears twice (0: none)", 0, 1024},
        {"--min-length", "N", K::Integer, "a Hugging Face model: no EOS before this length (a decoder-only prompt counts)", 0,
         1 << 24},
        {"--min-new-tokens", "N", K::Integer, "a Hugging Face model: no EOS before N new tokens", 0, 1 << 24},
        {"--bad-words-ids", "IDS", K::Text, "a Hugging Face model: token sequences never generated, comma-separated ids,\n"
                                            "sequences separated by ';'"},
        kPrecision, kWeights,
        {"--submit-budget-ms", "MS", K::Number, "GPU time per submit (default 2; 0: no budget)", 0, 1e6},
        {"--max-steps-per-submit", "N", K::Integer, "decoding steps recorded into one submit (default 64)", 1, 4096},
        {"--warmup", nullptr, K::Switch, "generate once untimed first (pipelines compiled, caches warm)"},
        kProfile,
        {"--json", nullptr, K::Switch, "one JSON object: ids, times, counters (schema: docs/cli.md)"}}},
      {"score", "how likely a target given a source, or a token sequence, is: log-probability, perplexity, logits",
       "usage: vkformer score --model DIR --src-ids 5,17,9 --tgt-ids 1,7,8 [--logits-out FILE.npy] [options]\n"
       "       vkformer score --model DIR --ids 5,17,9 [--logits-out FILE.npy] [options]   (decoder-only)",
       "Prints the total log-probability (natural log) of every token after the first given\n"
       "the ones before it, how many tokens that scores, and their perplexity,\n"
       "exp(-log-probability / tokens). --logits-out also writes the logits [len(tgt),\n"
       "tgt_vocab] (decoder-only: [len(ids), vocab], row i predicting token i+1) as a float32\n"
       ".npy file (written whole or not at all: a temporary file renamed after a flushed\n"
       "write; README: files vkformer writes).",
       {kModel,
        {"--src-ids", "IDS", K::Text, "an encoder-decoder's source ids, comma-separated"},
        {"--tgt-ids", "IDS", K::Text, "its target's ids, starting with BOS"},
        {"--ids", "IDS", K::Text, "a decoder-only model's token ids, used as given"},
        {"--logits-out", "FILE", K::Text, "also write the logits to this .npy file"},
        kPrecision, kWeights, kProfile,
        {"--json", nullptr, K::Switch, "one JSON object describing what was written (schema: docs/cli.md)"}}},
      {"encode", "an encoder-only model's last hidden state (and pooled output) for token ids",
       "usage: vkformer encode --model DIR --ids 101,17,102 [--token-types 0,0,0] [--hidden-out H.npy]\n"
       "                       [--pooled-out P.npy] [--logits-out L.npy] [options]",
       "Runs an encoder-only model (BERT) over one sequence of token ids (with their token\n"
       "types; default all 0) and prints its size; --hidden-out writes the last hidden state\n"
       "[len(ids), hidden_size] and --pooled-out the pooler's output [1, hidden_size] (where the\n"
       "checkpoint has a pooler) and --logits-out its head's logits (a masked-LM head's\n"
       "[len(ids), vocab], a classifier's [1, labels], whose largest names the label printed)\n"
       "as float32 .npy files (written whole or not at all: a temporary file renamed after a\n"
       "flushed write; README: files vkformer writes).",
       {kModel,
        {"--ids", "IDS", K::Text, "the token ids, comma-separated (required)"},
        {"--token-types", "IDS", K::Text, "each id's token type, comma-separated (default all 0)"},
        {"--hidden-out", "FILE", K::Text, "write the last hidden state to this .npy file"},
        {"--pooled-out", "FILE", K::Text, "write the pooler's output to this .npy file"},
        {"--logits-out", "FILE", K::Text, "write the head's logits to this .npy file (masked LM: [len(ids), vocab]; classifier: [1, labels])"},
        kPrecision, kWeights,
        {"--json", nullptr, K::Switch, "one JSON object describing what was computed and written (schema: docs/cli.md)"}}},
      {"embed", "sentence embeddings of texts (sentence-transformers directories, BERT)",
       "usage: vkformer embed --model DIR [--out E.npy] [--json] [options] [--] [\"text\" ...]",
       "Embeds each argument, or each line of standard input when no text is given, as\n"
       "sentence-transformers does from the directory's modules.json (its pooling and\n"
       "normalisation; a plain BERT directory: the mean of its tokens). Texts longer than\n"
       "max_seq_length tokens are cut there, as sentence-transformers cuts them, and said once\n"
       "on stderr. --out writes float32 [texts, width] as .npy (written whole or not at all);\n"
       "else each embedding is printed as a line of numbers. Text that begins with '-' goes\n"
       "after --.",
       {kModel,
        {"--out", "FILE", K::Text, "write the embeddings [texts, width] to this .npy file"},
        {"--batch", "N", K::Integer, "texts per batch on the device (default 32)", 1, 4096},
        kPrecision, kWeights,
        {"--profile", nullptr, K::Switch, "per-dispatch GPU times of the last batch on stderr"},
        {"--json", nullptr, K::Switch, "one JSON object: the settings, the texts cut, the embeddings unless --out (schema: docs/cli.md)"}},
       "TEXT"},
      {"search", "rank a corpus's lines by meaning against a query (semantic search)",
       "usage: vkformer search --model DIR --corpus FILE --query \"text\" [--top K] [--cache FILE] [options]",
       "Embeds every line of the corpus (one text a line, none empty; longest first in\n"
       "batches, progress on a terminal) and the query, and prints the K lines most alike by\n"
       "cosine similarity, best first. --cache keeps the corpus's embeddings in FILE (a .npy\n"
       "that NumPy reads, with vkformer's key after the data): a later search with the same\n"
       "model, precision and corpus reads them instead of embedding again; a cache made from\n"
       "anything else, or damaged, is said on stderr and rebuilt, never used. --pair ranks by a\n"
       "cross-encoder instead: each line scored with the query as a pair, sigmoid of its logit.",
       {kModel,
        {"--corpus", "FILE", K::Text, "the texts to search, one a line (required)"},
        {"--query", "TEXT", K::Text, "what to search for (required)"},
        {"--top", "K", K::Integer, "how many lines to print (default 5)", 1, 1 << 20},
        {"--cache", "FILE", K::Text, "read the corpus's embeddings from, or write them to, this file"},
        {"--pair", nullptr, K::Switch,
         "rank by a cross-encoder's score of (query, line) instead (a one-label\n"
         "classifier: BertForSequenceClassification with num_labels 1)"},
        {"--batch", "N", K::Integer, "texts per batch on the device (default 32)", 1, 4096},
        kPrecision, kWeights,
        {"--json", nullptr, K::Switch, "one JSON object: the ranking and whether the cache was used (schema: docs/cli.md)"}}},
      {"translate", "text in, text out with the model's tokenizer",
       "usage: vkformer translate --model DIR [options] [--] [\"text\" ...]",
       "Translates each argument, or each line of standard input as it arrives when no text\n"
       "is given (lines already waiting are batched together), so it works as a filter. An\n"
       "empty line gives an empty line; a line that cannot be read (not UTF-8, too long) is\n"
       "reported on stderr with its number, the others are answered in order, and the exit\n"
       "status is 1 at the end. Input longer than the model's max_position is an error unless\n"
       "--truncate is given; an output cut at --max-new-tokens is warned about. Text that\n"
       "begins with '-' goes after --.",
       {kModel,
        {"--beam", "K", K::Integer, "beam search of width K (default: the model's num_beams, else 1: greedy)", 1,
         GenerateOptions::kMaxBeam},
        {"--batch", "N", K::Integer, "at most N inputs per batch (default 64)", 1, 4096},
        {"--max-new-tokens", "N", K::Integer, "at most N tokens per output (default: the model's max_length - 1, else 32)",
         1, 1 << 16},
        {"--truncate", nullptr, K::Switch, "cut inputs longer than the model allows, with a warning"},
        kPrecision, kWeights,
        {"--profile", nullptr, K::Switch, "per-dispatch GPU times of the last batch on stderr"},
        {"--json", nullptr, K::Switch, "one JSON object per input, one per line (schema: docs/cli.md)"}},
       "TEXT"},
      {"forecast", "forecasts from a series with a patch forecaster",
       "usage: vkformer forecast --model DIR [--series FILE] [options]",
       "Reads a series (one number per line; default DIR/test_series.txt), forecasts every\n"
       "window whose future the series holds and scores it against a naive last-value\n"
       "forecast, then forecasts past the series' end.",
       {{"--model", "DIR", K::Text, "a patch forecaster's directory (required)"},
        {"--series", "FILE", K::Text, "the series, one number per line (default DIR/test_series.txt)"},
        kPrecision, kJson}},
      {"tune", "verify and time GEMM kernel variants on this device; keep the fastest",
       "usage: vkformer tune [--model DIR] [--precision fp32|fp16] [--budget-s S] [--json]",
       "Runs every GEMM tile configuration valid on the device against a double-precision\n"
       "reference on random inputs (one that errs by more than 1e-5 of sum |a b| is rejected\n"
       "and reported, never used), times the verified ones beside the default table's\n"
       "choice on one product of each row class (M <= 64, <= 256, > 256) of the model's shapes\n"
       "(default Transformer-base's), and\n"
       "writes the winners that beat the default by 5% or more to this device's tuning file\n"
       "in the cache directory, which every later run reads (README: GEMM variants and tuning).",
       {{"--model", "DIR", K::Text, "tune on this model's products (d_model and FFN width)"},
        kPrecision,
        {"--budget-s", "S", K::Number, "seconds to spend in all (default 120); what is left untried is said", 1, 3600},
        {"--json", nullptr, K::Switch, "one JSON object: every candidate, verified or rejected, and its time"}}},
      {"bench", "kernels and model decoding beside baselines measured in the same run",
       "usage: vkformer bench [ops|model|all] [options]\n"
       "       vkformer bench chart REPORT.json... --svg OUT.svg",
       "Kernels beside OpenBLAS and the unfused attention path, and model decoding speed, on\n"
       "every device (or --device); `chart` draws one chart from several reports. GEMM runs\n"
       "squares from 64 and the shapes a Transformer-base runs (M = 1, 24, 32, 256 rows);\n"
       "tools/bench_gemm_torch.py times torch.matmul at the same sizes from the --json-out report.",
       {{"--json", nullptr, K::Switch, "the report on stdout instead of the table (docs/bench.schema.json)"},
        {"--json-out", "FILE", K::Text, "the report to FILE as well"},
        {"--svg", "FILE", K::Text, "a chart of the run"},
        kPrecision,
        {"--quick", nullptr, K::Switch, "smaller sizes (CI)"},
        {"--max-size", "N", K::Integer, "the largest square GEMM (default 4096; 2048 on CPU drivers)", 64, 16384},
        {"--rounds", "N", K::Integer,
         "timed rounds of the model benchmark (default 3) and alternating rounds of\n"
         "--weights (default 5), medians reported: more on a noisy machine", 1, 99},
        {"--model", "DIR", K::Text,
         "the model for the decoding benchmark (default: the date sample installed\n"
         "with vkformer, share/vkformer/samples/dates, or the source tree's)"},
        {"--weights", "LIST", K::Text,
         "also decode the model with its weights stored each way, side by side\n"
         "(e.g. fp16,q8_0,q4_k_m: fp32, fp16, llama.cpp's blocks q8_0, q6_k, q5_k,\n"
         "q5_1, q5_0, q4_k, q4_1, q4_0 or its mixes q4_k_m, q5_k_m), with the\n"
         "weights' bytes and the decode step's GEMM time"}},
       "WHAT"},
  };
  return table;
}

const CommandSpec* find_command(const std::string& name) {
  for (const CommandSpec& c : commands())
    if (name == c.name) return &c;
  return nullptr;
}

namespace {

std::string range(const OptionSpec& o) {
  if (o.kind != K::Integer && o.kind != K::Number) return "";
  char text[64];
  if (o.max >= 1.8e19)
    std::snprintf(text, sizeof text, " (%g to 2^64-1)", o.min);
  else if (o.kind == K::Integer)
    std::snprintf(text, sizeof text, " (%.0f to %.0f)", o.min, o.max);
  else
    std::snprintf(text, sizeof text, " (%g to %g)", o.min, o.max);
  return text;
}

std::string describe(const std::vector<OptionSpec>& options) {
  std::string s;
  for (const OptionSpec& o : options) {
    std::string head = std::string("  ") + o.name + (o.value ? std::string(" ") + o.value : "");
    head.resize(std::max<size_t>(head.size() + 2, 23), ' ');
    std::string help = std::string(o.help) + range(o);
    for (size_t at = 0, nl; (nl = help.find('\n', at)) != std::string::npos; at = nl + 24)
      help.replace(nl, 1, "\n" + std::string(23, ' '));
    s += head + help + "\n";
  }
  return s;
}

}  // namespace

std::string command_help(const CommandSpec& c) {
  return std::string(c.usage) + "\n\n" + c.about + "\n\n" + describe(c.options) + "\ncommon options:\n" +
         describe(common_options());
}

std::string overview() {
  std::string s = std::string("vkformer ") + version() +
                  ": transformer inference on any Vulkan GPU\n\nusage: vkformer <command> [options]\n"
                  "       vkformer <command> --help\n\ncommands:\n";
  for (const CommandSpec& c : commands()) {
    std::string name = c.name;
    name.resize(12, ' ');
    s += "  " + name + c.summary + "\n";
  }
  return s + "\ncommon options:\n" + describe(common_options()) +
         "\nexit status: 0 done; 1 an error, named on stderr (bad options, input or files, a device\n"
         "failure, a failed write to standard output); 2 no command or an unknown one.\n";
}

}  // namespace vkf::cli

namespace vkf::cli {

int help_command(const Args& args) {
  if (args.rest().size() > 1) throw Error("help takes one command at most");
  if (args.rest().empty()) {
    std::fputs(overview().c_str(), stdout);
    return 0;
  }
  const CommandSpec* spec = find_command(args.rest()[0]);
  if (!spec) throw Error("unknown command '" + args.rest()[0] + "' (vkformer help lists them)");
  std::fputs(command_help(*spec).c_str(), stdout);
  return 0;
}

int version_command(const Args& args) {
  if (args.flag("--json"))
    std::printf("{\"vkformer_version\":\"%s\",\"abi_version\":%d}\n", vkf::version(), VKF_ABI_VERSION);
  else
    std::printf("vkformer %s (C ABI %d)\n", vkf::version(), VKF_ABI_VERSION);
  return 0;
}

}  // namespace vkf::cli
