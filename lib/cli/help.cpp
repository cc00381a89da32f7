// Every subcommand's --help, in one place so that the overview and the details agree.
#include "help.hpp"

#include <cstring>

#include "vkformer/context.hpp"

namespace vkf::cli {

namespace {

constexpr const char* kCommon =
    "\ncommon options:\n"
    "  --device N|NAME      device by index or name substring (also VKF_DEVICE)\n"
    "  --validation         enable the Khronos validation layer (also VKF_VALIDATION=1)\n"
    "  --no-cache           do not read or write the shader and pipeline caches\n"
    "  --help, -h           this text\n";

struct Help {
  const char* name;
  const char* summary;  // one line for the overview
  const char* details;
};

constexpr Help kHelp[] = {
    {"info", "every Vulkan device, its capabilities and what vkformer uses",
     "usage: vkformer info [--model DIR] [--json]\n\n"
     "Lists every Vulkan device with its limits, memory, the optional features vkformer\n"
     "uses there and any driver quirk; the default device is marked with '*'.\n\n"
     "  --model DIR          instead: what vkformer reads from a model directory (architecture,\n"
     "                       sizes, tokenizer, generation defaults)\n"
     "  --json               one JSON object (schema: docs/cli.md)\n"},
    {"selftest", "compile a shader, run it on the chosen device, check the answer",
     "usage: vkformer selftest [--json]\n\n"
     "Compiles a small kernel, runs it on the chosen device and checks every element\n"
     "against the CPU. Exit status 0 only when it matches and the validation layer (when\n"
     "on) reported nothing.\n\n"
     "  --json               one JSON object (schema: docs/cli.md)\n"},
    {"generate", "target token ids from source token ids (greedy, beam or sampling)",
     "usage: vkformer generate --model DIR --src-ids 5,17,9[;4,2...] [options]\n\n"
     "Prints the generated target ids after BOS, one line per source (EOS included when\n"
     "produced); a warning on stderr names any source cut at --max-new-tokens.\n\n"
     "  --model DIR          a model directory: torch-seq2seq, or Hugging Face marian (with source.spm,\n"
     "                       target.spm, vocab.json) as save_pretrained writes it\n"
     "  --src-ids IDS        comma-separated ids; several sources separated by ';'\n"
     "  --max-new-tokens N   at most N tokens per source (default: 64, at most max_position)\n"
     "  --beam K             beam search of width K, 1 to 128 (default 1: greedy)\n"
     "  --length-penalty A   beam: score / length^A (default 1)\n"
     "  --temperature T      > 0: sample at temperature T (0 to 100; default 0: greedy)\n"
     "  --top-k K            sampling: keep the K most likely tokens (0: all)\n"
     "  --top-p P            sampling: keep the smallest set with probability P (0 < P <= 1)\n"
     "  --seed S             sampling seed, 0 to 2^64-1 (default: a fresh one each run, printed on\n"
     "                       stderr and in --json as \"seed\"); one seed always draws the same tokens\n"
     "  --precision fp32|fp16  storage precision of weights and activations (default fp32)\n"
     "  --submit-budget-ms MS  GPU time per submit (default 2; 0: no budget)\n"
     "  --max-steps-per-submit N  greedy steps recorded into one submit (default 64)\n"
     "  --warmup             generate once untimed first (pipelines compiled, caches warm)\n"
     "  --profile            per-dispatch GPU times and counters on stderr\n"
     "  --json               one JSON object: ids, times, counters (schema: docs/cli.md)\n"},
    {"score", "teacher-forced logits of a target given a source, as .npy",
     "usage: vkformer score --model DIR --src-ids 5,17,9 --tgt-ids 1,7,8 --logits-out FILE.npy [options]\n\n"
     "Writes the logits [len(tgt), tgt_vocab] as a float32 .npy file (written whole or\n"
     "not at all: a temporary file renamed after a flushed write).\n\n"
     "  --precision fp32|fp16  storage precision (default fp32)\n"
     "  --profile            per-dispatch GPU times on stderr\n"
     "  --json               one JSON object describing what was written (schema: docs/cli.md)\n"},
    {"translate", "text in, text out with the model's tokenizer",
     "usage: vkformer translate --model DIR [\"text\" ...] [options]\n\n"
     "Translates each argument, or each line of standard input as it arrives when no text\n"
     "is given (lines already waiting are batched together), so it works as a filter. An\n"
     "empty line gives an empty line. Input longer than the model's max_position is an\n"
     "error unless --truncate is given; an output cut at --max-new-tokens is warned about.\n\n"
     "  --beam K             beam search of width K, 1 to 128 (default: the model's num_beams, else 1: greedy)\n"
     "  --batch N            at most N inputs per batch, 1 to 4096 (default 64)\n"
     "  --max-new-tokens N   at most N tokens per output (default: the model's max_length - 1, else 32)\n"
     "  --truncate           cut inputs longer than the model allows, with a warning\n"
     "  --precision fp32|fp16  storage precision (default fp32)\n"
     "  --profile            per-dispatch GPU times of the last batch on stderr\n"
     "  --json               one JSON object per input, one per line (schema: docs/cli.md)\n"},
    {"forecast", "forecasts from a series with a patch forecaster",
     "usage: vkformer forecast --model DIR [--series FILE] [options]\n\n"
     "Reads a series (one number per line; default DIR/test_series.txt), forecasts every\n"
     "window whose future the series holds and scores it against a naive last-value\n"
     "forecast, then forecasts past the series' end.\n\n"
     "  --precision fp32|fp16  storage precision (default fp32)\n"
     "  --json               one JSON object (schema: docs/cli.md)\n"},
    {"bench", "kernels and model decoding beside baselines measured in the same run",
     "usage: vkformer bench [ops|model|all] [options]\n"
     "       vkformer bench chart REPORT.json... --svg OUT.svg\n\n"
     "Kernels beside OpenBLAS and the unfused attention path, and model decoding speed, on\n"
     "every device (or --device); `chart` draws one chart from several reports. GEMM runs\n"
     "squares from 64 and the shapes a Transformer-base runs (M = 1, 24, 32, 256 rows);\n"
     "tools/bench_gemm_torch.py times torch.matmul at the same sizes from the --json-out report.\n\n"
     "  --json               the report on stdout instead of the table (docs/bench.schema.json)\n"
     "  --json-out FILE      the report to FILE as well\n"
     "  --svg FILE           a chart of the run\n"
     "  --precision fp32|fp16  (default fp32)\n"
     "  --quick              smaller sizes (CI)\n"
     "  --max-size N         the largest square GEMM (default 4096; 2048 on CPU drivers)\n"
     "  --model DIR          the model for the decoding benchmark (default samples/dates)\n"},
};

}  // namespace

std::string overview() {
  std::string s = std::string("vkformer ") + version() +
                  ": transformer inference on any Vulkan GPU\n\nusage: vkformer <command> [options]\n"
                  "       vkformer <command> --help\n\ncommands:\n";
  for (const Help& h : kHelp) {
    std::string name = h.name;
    name.resize(12, ' ');
    s += "  " + name + h.summary + "\n";
  }
  return s + kCommon;
}

const char* command_help(const std::string& command) {
  static std::string texts[sizeof kHelp / sizeof kHelp[0]];
  for (size_t i = 0; i < sizeof kHelp / sizeof kHelp[0]; ++i)
    if (command == kHelp[i].name) {
      if (texts[i].empty()) texts[i] = std::string(kHelp[i].details) + kCommon;
      return texts[i].c_str();
    }
  return nullptr;
}

}  // namespace vkf::cli
