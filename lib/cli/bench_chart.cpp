// SVG bar charts of bench reports: GEMM GFLOP/s by size and decoding tokens/s, one bar
// per run (device, driver, precision), so vendors and drivers sit side by side.
#include <algorithm>
#include <cstdio>
#include <map>

#include "bench.hpp"

namespace vkf::cli {

namespace {

std::string escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '<') r += "&lt;";
    else if (ch == '>') r += "&gt;";
    else if (ch == '&') r += "&amp;";
    else r += ch;
  }
  return r;
}

// An axis label a person reads: 1640, 12.5, 0.75 (never 1.64e+03).
std::string tick(double v) {
  char text[32];
  std::snprintf(text, sizeof text, v >= 100 ? "%.0f" : v >= 10 ? "%.1f" : "%.3g", v);
  return text;
}

const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"};

struct Series {
  std::string label;
  std::map<std::string, double> values;  // category -> value
};

// One grouped bar panel at vertical offset y; returns its SVG.
std::string panel(const std::string& title, const std::string& unit, const std::vector<std::string>& categories,
                  const std::vector<Series>& series, int y) {
  const int width = 900, height = 260, left = 70, bottom = 40, top = 30;
  double max_v = 0;
  for (auto& s : series)
    for (auto& [k, v] : s.values) max_v = std::max(max_v, v);
  if (max_v <= 0) max_v = 1;
  std::string svg;
  char buf[512];
  std::snprintf(buf, sizeof buf, "<g transform=\"translate(0,%d)\"><text x=\"%d\" y=\"20\" font-size=\"15\" font-weight=\"bold\">%s</text>\n",
                y, left, escape(title).c_str());
  svg += buf;
  const int plot_h = height - top - bottom, plot_w = width - left - 20;
  std::snprintf(buf, sizeof buf, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#333\"/>\n", left, top + plot_h,
                left + plot_w, top + plot_h);
  svg += buf;
  for (int t = 0; t <= 4; ++t) {
    const double v = max_v * t / 4;
    const int yy = top + plot_h - int(plot_h * t / 4);
    std::snprintf(buf, sizeof buf, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s</text>\n", left - 6,
                  yy + 4, tick(v).c_str());
    svg += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x=\"12\" y=\"%d\" font-size=\"11\" transform=\"rotate(-90 12 %d)\">%s</text>\n",
                top + plot_h / 2, top + plot_h / 2, escape(unit).c_str());
  svg += buf;
  const int groups = std::max<int>(1, int(categories.size()));
  const double group_w = double(plot_w) / groups, bar_w = group_w * 0.8 / std::max<size_t>(1, series.size());
  for (int g = 0; g < groups && !categories.empty(); ++g) {
    for (size_t s = 0; s < series.size(); ++s) {
      auto it = series[s].values.find(categories[g]);
      if (it == series[s].values.end()) continue;
      const double h = plot_h * it->second / max_v;
      const double x = left + g * group_w + group_w * 0.1 + s * bar_w;
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s: %.4g %s</title></rect>\n",
                    x, top + plot_h - h, bar_w, h, kColors[s % 8], escape(series[s].label).c_str(), it->second,
                    escape(unit).c_str());
      svg += buf;
    }
    std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                  left + g * group_w + group_w / 2, top + plot_h + 16, escape(categories[g]).c_str());
    svg += buf;
  }
  return svg + "</g>\n";
}

}  // namespace

std::string bench_chart(const std::vector<nlohmann::json>& reports) {
  // One series per run: its model (when it has one), device, driver and precision.
  std::vector<Series> gemm, prompt, decode;
  std::vector<int> sizes, prompt_lengths, batches;  // sorted as numbers below
  auto add = [](std::vector<int>& keys, int k) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  };
  for (auto& report : reports)
    for (auto& run : report.value("runs", nlohmann::json::array())) {
      std::string model;
      if (run.contains("model")) {
        model = run["model"].value("model", "");
        if (const size_t slash = model.find_last_of('/'); slash != std::string::npos && slash + 1 < model.size())
          model = model.substr(slash + 1);
        model += " | ";
      }
      const std::string label = model + run["device"].value("name", "?") + " | " +
                                run["device"].value("driver_info", "") + " | " + run["settings"].value("precision", "");
      Series g{label, {}}, p{label, {}}, d{label, {}};
      if (run.contains("ops"))
        for (auto& r : run["ops"]["gemm"]) {
          g.values[std::to_string(r["n"].get<int>())] = r["gflops"];
          add(sizes, r["n"].get<int>());
        }
      if (run.contains("model")) {
        for (auto& r : run["model"].value("prompt", nlohmann::json::array())) {
          p.values[std::to_string(r["tokens"].get<int>())] = r["tokens_per_second"];
          add(prompt_lengths, r["tokens"].get<int>());
        }
        for (auto& r : run["model"].value("greedy", nlohmann::json::array())) {
          if (r.contains("skipped")) continue;  // a batch the device could not hold
          d.values[std::to_string(r["batch"].get<int>())] = r["tokens_per_second"];
          add(batches, r["batch"].get<int>());
        }
      }
      gemm.push_back(g);
      prompt.push_back(p);
      decode.push_back(d);
    }
  auto categories = [](std::vector<int> keys, const std::string& prefix, const std::string& suffix,
                       std::vector<Series>& series) {
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> out;
    for (int k : keys) {
      const std::string name = prefix + std::to_string(k) + suffix;
      for (auto& s : series)  // the values keyed by the category's display name
        if (auto it = s.values.find(std::to_string(k)); it != s.values.end()) {
          s.values[name] = it->second;
        }
      out.push_back(name);
    }
    return out;
  };
  std::string body;
  int y = 0;
  // A panel for each kind of result some report holds; none for a kind none holds.
  auto draw = [&](const std::string& title, const std::string& unit, std::vector<int>& keys, const std::string& prefix,
                  const std::string& suffix, std::vector<Series>& series) {
    if (keys.empty()) return;
    body += panel(title, unit, categories(keys, prefix, suffix, series), series, y);
    y += 270;
  };
  draw("GEMM (A B^T), fp32 accumulate: n x n x n", "GFLOP/s", sizes, "", "^3", gemm);
  draw("Prompt processing", "prompt tokens/s", prompt_lengths, "", " tokens", prompt);
  draw("Greedy decoding", "tokens/s", batches, "batch ", "", decode);
  const int legend_y = y + 10;
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"" +
                    std::to_string(legend_y + 20 * gemm.size() + 20) +
                    "\" font-family=\"sans-serif\"><rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body;
  char buf[768];
  for (size_t s = 0; s < gemm.size(); ++s) {
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"70\" y=\"%zu\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"88\" y=\"%zu\" font-size=\"12\">%s</text>\n",
                  legend_y + 20 * s, kColors[s % 8], legend_y + 20 * s + 11, escape(gemm[s].label).c_str());
    svg += buf;
  }
  return svg + "</svg>\n";
}

}  // namespace vkf::cli
