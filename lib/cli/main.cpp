// The vkformer command: one binary, one subcommand per job.
#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "vkformer/context.hpp"
#include "vkformer/error.hpp"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "vkformer %s: transformer inference on any Vulkan GPU\n\n"
               "usage: vkformer <command> [options]\n\n"
               "commands:\n"
               "  info [--json]        every Vulkan device, its capabilities and what vkformer uses\n"
               "  selftest             compile a shader, run it on the chosen device, check the answer\n"
               "  generate --model DIR --src-ids 5,17,9[;4,2] [--max-new-tokens N] [--beam K] [--json]\n"
               "           [--temperature T --top-k K --top-p P --seed S]\n"
               "           [--submit-budget-ms MS] [--max-steps-per-submit N] [--warmup]\n"
               "                       generated target ids after BOS (EOS included when produced); greedy\n"
               "                       decoding runs up to N steps per submit within MS of GPU time (2 ms, 64;\n"
               "                       a budget of 0: none). --json adds encode and decode times and counters;\n"
               "                       --warmup generates once untimed first (pipelines compiled, caches warm)\n"
               "  score --model DIR --src-ids 5,17,9 --tgt-ids 1,7,8 --logits-out FILE.npy\n"
               "                       teacher-forced logits [len(tgt), tgt_vocab] as float32 .npy\n"
               "  translate --model DIR [\"text\" ...] [--beam K] [--batch N]\n"
               "                       text in, text out (stdin, one input per line, when no text is given)\n"
               "  forecast --model DIR [--series FILE]\n"
               "                       forecasts from a series (one value per line), beside a naive forecast\n"
               "  bench [ops|model|all] [--json | --json-out FILE] [--svg FILE] [--precision P] [--quick] [--model DIR]\n"
               "                       kernels beside OpenBLAS and the unfused attention path, and model\n"
               "                       decoding speed, on every device (or --device)\n"
               "  bench chart REPORT.json... --svg OUT.svg\n"
               "                       one chart comparing the runs of several reports\n\n"
               "common options:\n"
               "  --device N|NAME      device by index or name substring (also VKF_DEVICE)\n"
               "  --validation         enable the Khronos validation layer (also VKF_VALIDATION=1)\n"
               "  --precision fp32|fp16  storage precision of weights and activations (generate, score)\n"
               "  --profile            per-dispatch GPU times (generate, score)\n",
               vkf::version());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("vkformer %s\n", vkf::version());
    return 0;
  }
  const std::string command = argv[1];
  try {
    if (command == "bench") {
      // vkformer bench [ops] [options]
      const bool named = argc > 2 && argv[2][0] != '-';
      const std::string what = named ? argv[2] : "all";
      vkf::cli::Args args(argc, argv, named ? 3 : 2);
      return vkf::cli::bench(args, what);
    }
    vkf::cli::Args args(argc, argv, 2);
    if (command == "info") return vkf::cli::info(args);
    if (command == "selftest") return vkf::cli::selftest(args);
    if (command == "generate") return vkf::cli::generate(args);
    if (command == "score") return vkf::cli::score(args);
    if (command == "translate") return vkf::cli::translate(args);
    if (command == "forecast") return vkf::cli::forecast(args);
    std::fprintf(stderr, "vkformer: unknown command '%s'\n\n", command.c_str());
    usage(stderr);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vkformer %s: error: %s\n", command.c_str(), e.what());
    return 1;
  }
}
